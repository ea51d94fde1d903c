import Synchronization

/// The HTTP server's bound on attachments held in memory: at most `capacity(.upload)` bodies being read or stored,
/// and `capacity(.download)` answers being read or sent, at once (`HTTPLimits.attachmentUploads`/`…Downloads`). With
/// `attachment_max_bytes` that bounds the memory hostile clients can pin through attachments.
///
/// A place is taken at admission, before any body is read (none free: the request is answered 503 at once), and given
/// back when the request ends however it ends (libmicrohttpd's completion callback), or as soon as an upload's body
/// turns out too large and is dropped.
final class AttachmentPlaces: Sendable {
    private let taken = Mutex<[HTTPRouter.AttachmentTransfer: Int]>([:])
    private let uploads: Int
    private let downloads: Int

    /// At most `uploads` and `downloads` places of each kind (at least one each).
    init(uploads: Int, downloads: Int) {
        self.uploads = max(1, uploads)
        self.downloads = max(1, downloads)
    }

    /// How many of `kind` may be held at once.
    func capacity(_ kind: HTTPRouter.AttachmentTransfer) -> Int { kind == .upload ? uploads : downloads }

    /// Takes a place of `kind`; false when all are held.
    func take(_ kind: HTTPRouter.AttachmentTransfer) -> Bool {
        taken.withLock {
            guard $0[kind, default: 0] < capacity(kind) else { return false }
            $0[kind, default: 0] += 1
            return true
        }
    }

    /// Gives back a place taken by `take`.
    func give(_ kind: HTTPRouter.AttachmentTransfer) {
        taken.withLock { $0[kind, default: 0] -= 1 }
    }

    /// Places of `kind` held now.
    func held(_ kind: HTTPRouter.AttachmentTransfer) -> Int { taken.withLock { $0[kind, default: 0] } }
}
