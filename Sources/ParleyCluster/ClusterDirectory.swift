/// The keys and commands of the cluster directory in Redis (pure: the agent runs them).
public enum ClusterDirectory {
    /// The set of node ids that registered (an id whose hash expired is removed by whoever lists it).
    public static let nodesKey = "parley:nodes"
    /// The most node ids one read of the directory takes.
    public static let maxNodesRead = 1_000
    /// A node lives this long past its last heartbeat (three beats).
    public static let nodeTTLMilliseconds = 3_000

    public static func nodeKey(_ id: String) -> String { "parley:node:" + id }
    /// A room's entry: the claim of the node it lives on (`RoomClaim`), as long as that node renews it
    /// (`nodeTTLMilliseconds`).
    public static func roomKey(_ name: String) -> String { "parley:room:" + name }
    /// The pattern every room's entry matches (for SCAN).
    public static let roomPattern = "parley:room:*"
    /// The most room entries one read of the directory takes (SCAN's pages stop there, and say so).
    public static let maxRoomsRead = 100_000

    /// One heartbeat, in one transaction: the node's hash replaced (rooms that closed leave it) and its lifetime
    /// renewed, its id in the set. A reader never sees the hash missing in between.
    public static func heartbeat(_ node: NodeRecord, online: [String] = [], mac: ClusterMAC) -> [[String]] {
        var commands = [["MULTI"],
                        ["DEL", nodeKey(node.id), onlineKey(node.id)],
                        ["HSET", nodeKey(node.id)] + node.fields(mac: mac),
                        ["PEXPIRE", nodeKey(node.id), String(nodeTTLMilliseconds)],
                        ["SADD", nodesKey, node.id]]
        if !online.isEmpty {
            commands.append(["SADD", onlineKey(node.id)] + online.prefix(maxOnlineListed))
            commands.append(["PEXPIRE", onlineKey(node.id), String(nodeTTLMilliseconds)])
        }
        return commands + [["EXEC"]]
    }

    /// The identities online on a node (presence sessions: calls and direct texts to them are routed there), rewritten
    /// with each heartbeat and living as long as the node's record.
    public static func onlineKey(_ id: String) -> String { "parley:online:" + id }
    /// The most identities one node lists.
    public static let maxOnlineListed = 100_000

    /// The node leaves at once (a clean stop).
    public static func leave(_ id: String) -> [[String]] { [["DEL", nodeKey(id), onlineKey(id)], ["SREM", nodesKey, id]] }
}

/// A room's entry in the directory (`parley:room:<name>`): the node that opened it first, in that node's start, with a
/// MAC over the room, the node and the start (`ClusterMAC`, the directory's key). Written `<node> <boot> <mac>`; a
/// claim that does not verify is nobody's (and the node that has the room writes its own over it).
public struct RoomClaim: Equatable, Sendable {
    /// The id of the node the room lives on.
    public var node: String
    /// That node's start (`NodeRecord.boot`): a claim from an earlier start is not the node's now.
    public var boot: UInt64

    public init(node: String, boot: UInt64) {
        self.node = node
        self.boot = boot
    }

    /// The claim as its entry holds it.
    public func value(room: String, mac: ClusterMAC) -> String {
        node + " " + String(boot) + " " + mac.mac(["room", room, node, String(boot)])
    }

    /// The claim an entry of `room` holds, when its MAC verifies; nil otherwise.
    public init?(room: String, value: String, mac: ClusterMAC) {
        let parts = value.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].utf8.count <= 64, let boot = UInt64(parts[1]), String(boot) == parts[1],
              mac.verifies(String(parts[2]), ["room", room, String(parts[0]), String(parts[1])]) else { return nil }
        self.init(node: String(parts[0]), boot: boot)
    }
}
