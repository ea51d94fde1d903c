import Glibc
import CParleySys
import ParleyNet
import ParleyWire
import Synchronization

/// The limit measured in the same run: a minimal fan-out forwarder with no relay logic. Members register with one
/// datagram ("RAWREG" + room as u32); every other datagram from a registered address is sent unchanged to the
/// other members of its room: recvmmsg into buffers allocated once → one sendmmsg entry per listener pointing into
/// the receive buffer → sendmmsg. It runs on its own thread and socket; its CPU is that thread's CPU time.
final class RawForwarder: @unchecked Sendable {
    // @unchecked Sendable: every field but the atomics is touched only by the forwarder's own thread after `start`.
    let socket: UDPSocket
    let address: PeerAddress
    /// The forwarder thread's CPU time in ns, published after every batch.
    let cpuNanoseconds = Atomic<Int64>(0)
    let forwarded = Atomic<Int>(0)
    private let stopFlag = Atomic<Bool>(false)
    private var thread = pthread_t()

    static let receiveSlots = 64, slotSize = 1536, sendSlots = 1024

    init() throws {
        socket = try UDPSocket(bindingTo: PeerAddress(ipv4: 127, 0, 0, 1, port: 0), bufferBytes: 8 << 20)
        address = socket.localAddress!
    }

    func start() {
        let box = Unmanaged.passRetained(self)
        pthread_create(&thread, nil, { raw in
            let me = Unmanaged<RawForwarder>.fromOpaque(raw!).takeRetainedValue()
            me.run()
            return nil
        }, box.toOpaque())
    }

    func stop() {
        stopFlag.store(true, ordering: .relaxed)
        pthread_join(thread, nil)
    }

    private func run() {
        let rxBuffers = UnsafeMutableRawPointer.allocate(byteCount: Self.receiveSlots * Self.slotSize, alignment: 16)
        let rxHeaders = UnsafeMutablePointer<parley_mmsg>.allocate(capacity: Self.receiveSlots)
        let rxIOV = UnsafeMutablePointer<iovec>.allocate(capacity: Self.receiveSlots)
        let rxNames = UnsafeMutablePointer<sockaddr_in>.allocate(capacity: Self.receiveSlots)
        let txHeaders = UnsafeMutablePointer<parley_mmsg>.allocate(capacity: Self.sendSlots)
        let txIOV = UnsafeMutablePointer<iovec>.allocate(capacity: Self.sendSlots)
        defer { rxBuffers.deallocate(); rxHeaders.deallocate(); rxIOV.deallocate(); rxNames.deallocate(); txHeaders.deallocate(); txIOV.deallocate() }
        for i in 0..<Self.receiveSlots { rxIOV[i] = iovec(iov_base: rxBuffers + i * Self.slotSize, iov_len: Self.slotSize) }
        // Registration state: grows only while members register (before media flows).
        var roomOf: [UInt64: Int] = [:]                      // ip << 16 | port → room
        var rooms: [[UnsafeMutablePointer<sockaddr_in>]] = []
        defer { for r in rooms { for a in r { a.deallocate() } } }
        var pfd = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
        while !stopFlag.load(ordering: .relaxed) {
            _ = poll(&pfd, 1, 50)
            while true {
                for i in 0..<Self.receiveSlots {
                    var h = msghdr()
                    h.msg_name = UnsafeMutableRawPointer(rxNames + i)
                    h.msg_namelen = socklen_t(MemoryLayout<sockaddr_in>.size)
                    h.msg_iov = rxIOV + i
                    h.msg_iovlen = 1
                    rxHeaders[i] = parley_mmsg(msg_hdr: h, msg_len: 0)
                }
                let n = Int(parley_recvmmsg(socket.fd, rxHeaders, UInt32(Self.receiveSlots)))
                if n <= 0 { break }
                var queued = 0
                func flush() {
                    var sent = 0
                    while sent < queued {
                        let k = Int(parley_sendmmsg(socket.fd, txHeaders + sent, UInt32(queued - sent)))
                        sent += k > 0 ? k : 1
                    }
                    forwarded.add(queued, ordering: .relaxed)
                    queued = 0
                }
                for i in 0..<n {
                    let from = rxNames[i]
                    let key = UInt64(UInt32(bigEndian: from.sin_addr.s_addr)) << 16 | UInt64(UInt16(bigEndian: from.sin_port))
                    let bytes = rxBuffers + i * Self.slotSize
                    let length = Int(rxHeaders[i].msg_len)
                    if let room = roomOf[key] {
                        for a in rooms[room] where a.pointee.sin_port != from.sin_port || a.pointee.sin_addr.s_addr != from.sin_addr.s_addr {
                            if queued == Self.sendSlots { flush() }
                            txIOV[queued] = iovec(iov_base: bytes, iov_len: length)
                            var h = msghdr()
                            h.msg_name = UnsafeMutableRawPointer(a)
                            h.msg_namelen = socklen_t(MemoryLayout<sockaddr_in>.size)
                            h.msg_iov = txIOV + queued
                            h.msg_iovlen = 1
                            txHeaders[queued] = parley_mmsg(msg_hdr: h, msg_len: 0)
                            queued += 1
                        }
                    } else if length == 10, bytes.load(as: UInt8.self) == UInt8(ascii: "R") {
                        let room = Int(UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: 6, as: UInt32.self)))
                        while rooms.count <= room { rooms.append([]) }
                        let a = UnsafeMutablePointer<sockaddr_in>.allocate(capacity: 1)
                        a.initialize(to: from)
                        rooms[room].append(a)
                        roomOf[key] = room
                    }
                }
                flush()
                if n < Self.receiveSlots { break }
            }
            var ts = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
            cpuNanoseconds.store(Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec), ordering: .relaxed)
        }
    }
}
