import Glibc
import CParleySys
import ParleyNet
import ParleyWire

/// The limit measured in the same run: a minimal fan-out forwarder with no relay logic. Members register with one
/// datagram ("RAWREG" + room as u32); every other datagram from a registered address is sent unchanged to the
/// other members of its room: recvmmsg into buffers allocated once → one sendmmsg entry per listener pointing into
/// the receive buffer → sendmmsg.
///
/// It runs as a process of its own — parley-load re-executed with `--serve-raw-forwarder` — on one socket with
/// `UDPSocket`'s default buffers, as the relay's are, so that both sides are measured alike: every thread of the
/// process through `ProcessProbe`. It serves until its parent exits or it is interrupted.
final class RawForwarder {
    /// The hidden command line that makes parley-load serve as the forwarder.
    static let serveFlag = "--serve-raw-forwarder"
    static let registrationTag: [UInt8] = Array("RAWREG".utf8)
    static let registrationSize = registrationTag.count + 4

    let socket: UDPSocket
    let address: PeerAddress

    static let receiveSlots = 64, slotSize = 1536, sendSlots = 1024

    init() throws {
        socket = try UDPSocket(bindingTo: PeerAddress(ipv4: 127, 0, 0, 1, port: 0))
        address = socket.localAddress!
    }

    /// The forwarder's process: reports its address on stdout, then forwards until the parent is gone.
    static func serve() -> Never {
        // A parent started in the background by a shell ignores SIGINT, and exec keeps that: stop on it by default.
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
        let parent = getppid()
        let forwarder: RawForwarder
        do { forwarder = try RawForwarder() } catch {
            writeLine("raw-forwarder: \(error)", fd: 2)
            exit(1)
        }
        writeLine("raw-forwarder ready on udp \(forwarder.address)")
        forwarder.run { getppid() != parent }
        exit(0)
    }

    /// The registration datagram of a member of `room`.
    static func registration(room: Int) -> [UInt8] {
        registrationTag + withUnsafeBytes(of: UInt32(room).bigEndian) { Array($0) }
    }

    private func run(until stop: () -> Bool) {
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
        while !stop() {
            _ = SystemCalls.kernel.poll(&pfd, 1, 50)
            while true {
                for i in 0..<Self.receiveSlots {
                    var h = msghdr()
                    h.msg_name = UnsafeMutableRawPointer(rxNames + i)
                    h.msg_namelen = socklen_t(MemoryLayout<sockaddr_in>.size)
                    h.msg_iov = rxIOV + i
                    h.msg_iovlen = 1
                    rxHeaders[i] = parley_mmsg(msg_hdr: h, msg_len: 0)
                }
                let n = Int(SystemCalls.kernel.recvmmsg(socket.fd, rxHeaders, UInt32(Self.receiveSlots)))
                if n <= 0 { break }
                var queued = 0
                func flush() {
                    var sent = 0
                    while sent < queued {
                        let k = Int(SystemCalls.kernel.sendmmsg(socket.fd, txHeaders + sent, UInt32(queued - sent)))
                        sent += k > 0 ? k : 1
                    }
                    queued = 0
                }
                for i in 0..<n {
                    let from = rxNames[i]
                    let key = UInt64(UInt32(bigEndian: from.sin_addr.s_addr)) << 16 | UInt64(UInt16(bigEndian: from.sin_port))
                    let bytes = rxBuffers + i * Self.slotSize
                    let length = Int(rxHeaders[i].msg_len)
                    if length == Self.registrationSize, bytes.load(as: UInt8.self) == Self.registrationTag[0] {
                        // A member registers once per block; the same address registering again changes nothing.
                        guard roomOf[key] == nil else { continue }
                        let room = Int(UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: Self.registrationTag.count, as: UInt32.self)))
                        while rooms.count <= room { rooms.append([]) }
                        let a = UnsafeMutablePointer<sockaddr_in>.allocate(capacity: 1)
                        a.initialize(to: from)
                        rooms[room].append(a)
                        roomOf[key] = room
                    } else if let room = roomOf[key] {
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
                    }
                }
                flush()
                if n < Self.receiveSlots { break }
            }
        }
    }
}
