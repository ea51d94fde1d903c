import ParleyRelay

extension API {
    /// `POST /v1/rooms/{room}/recording`'s body (optional).
    public struct RecordingRequest: Codable, Sendable, Equatable {
        /// A forward room: also mix its tracks into one file when the recording stops.
        public var mixdown: Bool?
    }

    /// `POST /v1/rooms/{room}/recording`'s answer: the recording's id and where its files will be listed.
    public struct RecordingStarted: Codable, Sendable, Equatable {
        public var recording: String
        public var room: String
        /// `/v1/recordings?recording=<id>`.
        public var files: String
    }

    /// One file of `GET /v1/recordings`.
    public struct RecordingFile: Codable, Sendable, Equatable {
        /// The file's id: `GET /v1/recordings/{id}` downloads it.
        public var id: String
        /// The recording it belongs to, its room and the room's mode.
        public var recording: String
        public var room: String
        public var mode: String
        /// `track` (one member's stream as it came) or `mix` (the room's shared mix).
        public var kind: String
        /// A track's member.
        public var identity: String?
        public var name: String?
        /// Bytes on disk now.
        public var size: Int
        /// Audio written so far, in ms.
        public var durationMs: Int64
        /// Unix ms; `stopped_at` absent while the recording runs.
        public var startedAt: Int64
        public var stoppedAt: Int64?
        /// Why it stopped, and a file's write error (a full disk).
        public var reason: String?
        public var error: String?
        /// Where to download it (`audio/ogg`, Ogg Opus).
        public var url: String

        init(_ e: RecordingCatalog.Entry) {
            id = e.id; recording = e.recording; room = e.room; mode = e.mode; kind = e.kind; identity = e.identity; name = e.name
            size = e.size; durationMs = e.durationMilliseconds; startedAt = e.startedAt; stoppedAt = e.stoppedAt
            reason = e.reason; error = e.error; url = "/v1/recordings/" + e.id
        }
    }

    /// One room text of `GET /v1/rooms/{room}/messages`.
    public struct RoomMessage: Codable, Sendable, Equatable {
        /// Its id, the cursor for older pages (`before`).
        public var id: String
        public var identity: String
        public var name: String
        public var text: String
        /// Unix ms.
        public var at: Int64
        /// The ids of the images it carries (`GET /v1/attachments/{id}`); absent when none.
        public var attachments: [String]?
    }

    /// `GET /v1/rooms/{room}/messages`: newest first; `next` is the `before` of the next (older) page.
    public struct RoomMessages: Codable, Sendable, Equatable {
        public var room: String
        public var messages: [RoomMessage]
        public var next: String?
    }

    /// `GET /v1/recordings`.
    public struct RecordingList: Codable, Sendable, Equatable {
        public var recordings: [RecordingFile]
    }
}
