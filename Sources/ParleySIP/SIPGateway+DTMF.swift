import CLibre
import Synchronization

/// Digits a backend has the gateway key to a phone in a room (`POST /v1/rooms/NAME/sip-calls/IDENTITY/dtmf`), as
/// RFC 4733 telephone-events in the call's audio stream (`DTMFSender`); the keys a phone presses in its room go the
/// other way, to the room's event stream (`SIPRoomDirectory.keyed`).
extension SIPGateway {
    /// The mailbox message carrying digits to the SIP thread.
    static let digitsMessage: Int32 = 3
    /// Digits one request may send at most.
    public static let maximumDigits = 32

    /// Digits for the call `identity` in `room`.
    final class DigitsBox {
        let room: String, identity: String, digits: String
        init(room: String, identity: String, digits: String) {
            self.room = room
            self.identity = identity
            self.digits = digits
        }
    }

    /// Why digits cannot be sent.
    public enum DigitsRefusal: Error, Equatable, Sendable {
        /// Not 1-32 keys (`0`-`9`, `*`, `#`, `A`-`D`).
        case invalid
        /// No SIP call of that identity is in that room.
        case noCall
        /// The phone offered no telephone-event, or its call is Opus (events go only in a G.711 stream).
        case noTelephoneEvent
    }

    /// Sends `digits` to the phone of the SIP call `identity` in `room` (any thread): checked here, keyed on the SIP
    /// thread. Digits queued behind others wait their turn.
    public func sendDigits(_ digits: String, room: String, identity: String) -> Result<Void, DigitsRefusal> {
        guard (1...Self.maximumDigits).contains(digits.count), DTMFSender.codes(digits) != nil else {
            return .failure(.invalid)
        }
        switch digitCalls.withLock({ $0[Self.key(room, identity)] }) {
        case nil: return .failure(.noCall)
        case false?: return .failure(.noTelephoneEvent)
        case true?: break
        }
        guard let mailbox else { return .failure(.noCall) }
        let box = Unmanaged.passRetained(DigitsBox(room: room, identity: identity, digits: digits))
        if mqueue_push(mailbox, Self.digitsMessage, box.toOpaque()) != 0 { box.release() }
        return .success(())
    }

    /// On the SIP thread: the digits to their call, if it is still there.
    func keyDigits(_ box: DigitsBox) {
        let call = live.values.first { $0.room == box.room && $0.identity == box.identity }
        if call?.sendDigits(box.digits) != true { log("sip: digits for \(box.identity) in \(box.room) not sent") }
    }

    /// On the SIP thread: the call `identity` in `room` is up (`sendsDigits`: whether it can be sent digits) or, nil,
    /// gone.
    func reachable(room: String, identity: String, sendsDigits: Bool?) {
        digitCalls.withLock { $0[Self.key(room, identity)] = sendsDigits }
    }

    private static func key(_ room: String, _ identity: String) -> String { room + "\n" + identity }

    /// Every 20 ms on the SIP thread, for each call with media up: a tick of the digits it is sending, and silence
    /// when its room says nothing (`SIPCallMedia.sendDTMF`, `fillSilence`). One timer for the gateway: a timer per
    /// call woke the SIP thread 50 times a second per call and cost 10-17 µs per call per 20 ms (SIPp, 50 calls).
    func pace() {
        let me = Unmanaged.passUnretained(self).toOpaque()
        tmr_start(paceTimer, 20, { arg in
            guard let arg else { return }
            let gateway = Unmanaged<SIPGateway>.fromOpaque(arg).takeUnretainedValue()
            gateway.pace()
            for call in gateway.live.values {
                call.media.sendDTMF()
                call.media.fillSilence()
            }
        }, me)
    }
}
