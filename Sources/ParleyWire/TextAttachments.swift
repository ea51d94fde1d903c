/// Images a text carries: the ids the relay's HTTP API gave them (`POST /v1/attachments`), never their bytes. A text
/// carries at most `maxCount`, on its first fragment only, each in a field of its own (tag 55, the id's 22 ASCII
/// characters); the relay passes them on unread and the recipients fetch the images (`GET /v1/attachments/{id}`).
///
/// ```
///  field 55:  tag 0x37 | length 0x0016 | 22 base64url characters (16 random bytes, no padding)
/// ```
/// An id is exactly 22 characters of the base64url alphabet (`A–Z a–z 0–9 - _`) spelling 16 bytes: its last character
/// carries 2 bits of the id and 4 of padding, which must be zero (`A`, `Q`, `g` or `w`), so each id has one spelling,
/// the one the relay hands out. More than `maxCount` ids, an id of any other form, or ids on a later fragment make
/// the datagram malformed.
public enum TextAttachments {
    /// The most ids one text carries.
    public static let maxCount = 4
    /// Characters of one id.
    public static let idLength = 22
    /// Bytes one id adds to a datagram: its field's tag (1) and length (2), then the id.
    public static let fieldSize = 3 + idLength

    /// Whether `id` is an attachment id (22 base64url characters spelling 16 bytes).
    public static func isID(_ id: some StringProtocol) -> Bool { isID(utf8: id.utf8) }

    /// Whether `ids` may ride on a text: at most `maxCount`, each an id.
    public static func areValid(_ ids: [String]) -> Bool { ids.count <= maxCount && ids.allSatisfy { isID($0) } }

    /// `isID` on the id's bytes (a datagram's field).
    static func isID<C: Collection>(utf8: C) -> Bool where C.Element == UInt8 {
        guard utf8.count == idLength else { return false }
        let last = utf8[utf8.index(utf8.startIndex, offsetBy: idLength - 1)]
        return utf8.allSatisfy(isAlphabet) && (last == UInt8(ascii: "A") || last == UInt8(ascii: "Q") || last == UInt8(ascii: "g") || last == UInt8(ascii: "w"))
    }

    /// The base64url alphabet (RFC 4648 §5).
    private static func isAlphabet(_ c: UInt8) -> Bool {
        (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x2D || c == 0x5F
    }
}
