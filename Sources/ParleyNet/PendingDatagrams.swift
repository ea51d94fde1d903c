import Glibc
import CParleySys

/// The datagrams a full socket (EAGAIN) refused, copied out of memory the caller reuses next (receive buffers, the
/// core's arena) and waiting for POLLOUT, oldest first. A ring of `capacity` fixed slots allocated once; each slot's
/// header points at its own bytes, iovec and address for good, so a run of neighbouring slots goes to sendmmsg as is.
///
///     headers  [ h0 │ h1 │ h2 │ h3 ]   the ring: `head` is the oldest, `count` are used, wrapping at `capacity`
///                ↓    ↓    ↓    ↓
///     iov      [ i0 │ i1 │ i2 │ i3 ]   iov_base = its slot (fixed), iov_len = the datagram's length
///     bytes    [ slot 0 (slotSize) │ slot 1 │ slot 2 │ slot 3 ]
///     names    [ sockaddr_in6 │ … ]   msg_namelen = the address's length
///
/// Owned by the batch's thread.
final class PendingDatagrams {
    /// Slots in the ring.
    let capacity: Int
    /// Bytes per slot; a longer datagram cannot wait.
    let slotSize: Int
    private let bytes: UnsafeMutableRawPointer
    private let headers: UnsafeMutablePointer<parley_mmsg>
    private let iov: UnsafeMutablePointer<iovec>
    private let names: UnsafeMutablePointer<sockaddr_in6>
    /// The oldest slot.
    private var head = 0
    /// Datagrams waiting.
    private(set) var count = 0

    /// Allocates every slot (the bytes are touched only once datagrams wait in them).
    init(capacity: Int, slotSize: Int) {
        self.capacity = capacity
        self.slotSize = slotSize
        bytes = .allocate(byteCount: max(1, capacity * slotSize), alignment: 16)
        headers = .allocate(capacity: max(1, capacity))
        iov = .allocate(capacity: max(1, capacity))
        names = .allocate(capacity: max(1, capacity))
        for i in 0..<capacity {
            iov[i] = iovec(iov_base: bytes + i * slotSize, iov_len: 0)
            names[i] = sockaddr_in6()
            var h = msghdr()
            h.msg_name = UnsafeMutableRawPointer(names + i)
            h.msg_iov = iov + i
            h.msg_iovlen = 1
            headers[i] = parley_mmsg(msg_hdr: h, msg_len: 0)
        }
    }

    deinit {
        bytes.deallocate()
        headers.deallocate()
        iov.deallocate()
        names.deallocate()
    }

    /// Copies one datagram and its address (`nameLength` bytes at `name`) in behind the others; returns why it
    /// could not wait, or nil once it does.
    func push(_ datagram: UnsafeRawBufferPointer, name: UnsafeRawPointer, nameLength: socklen_t) -> SendDropReason? {
        guard count < capacity else { return .queueFull }
        guard datagram.count <= slotSize else { return .tooLargeToQueue }
        let i = (head + count) % capacity
        if let source = datagram.baseAddress { iov[i].iov_base!.copyMemory(from: source, byteCount: datagram.count) }
        iov[i].iov_len = datagram.count
        UnsafeMutableRawPointer(names + i).copyMemory(from: name, byteCount: Int(nameLength))
        headers[i].msg_hdr.msg_namelen = nameLength
        count += 1
        return nil
    }

    /// The oldest datagrams that sit next to each other in the ring: where their headers start and how many
    /// (0 when none waits). One sendmmsg call's worth; after the ring wraps, the next run starts at slot 0.
    var firstRun: (headers: UnsafeMutablePointer<parley_mmsg>, count: Int) {
        (headers + head, min(count, capacity - head))
    }

    /// The length of the `offset`-th oldest datagram.
    func length(_ offset: Int) -> Int { iov[(head + offset) % capacity].iov_len }

    /// The bytes of the `offset`-th oldest datagram (valid until it is removed).
    func datagram(_ offset: Int) -> UnsafeRawBufferPointer {
        let i = (head + offset) % capacity
        return UnsafeRawBufferPointer(start: iov[i].iov_base, count: iov[i].iov_len)
    }

    /// Forgets the `n` oldest datagrams.
    func removeFirst(_ n: Int) {
        precondition(n <= count)
        count -= n
        head = count == 0 ? 0 : (head + n) % capacity
    }
}
