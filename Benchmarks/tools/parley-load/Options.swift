import Glibc
import ParleyNet
import ParleyWire

/// The command line of `parley-load`.
struct Options {
    enum Target { case server(PeerAddress), spawn }
    var target: Target = .spawn
    var workers = 1
    var rooms = 10
    var members = 10
    var speakers = 3
    var duration = 20.0
    var mode = "forward"
    var ramp = 1.0
    var json: String?
    var relayPID: Int32?
    var rawBaseline = false
    var findMax = false
    var findMaxCap = 60.0
    /// One-way latency above which a packet counts as late, in ms.
    var lateMilliseconds = 20.0
    /// The generator's 99th-percentile send tick later than this (ms) means the run measured the generator, not the relay.
    var maxTickLatenessMilliseconds = 10.0
    /// With --raw-baseline: blocks per side, alternating (P R R P …); --duration is split among them.
    var blocks = 2
    var selfCheck = false
    /// Members speak the cleartext protocol (debugging; the spawned relay runs --allow-cleartext): the same run
    /// without encryption, to see what encryption costs.
    var cleartext = false
    /// Audience rooms: the listeners join without the publish grant and are counted, not announced (`RoomRoster`).
    var audience = false
    /// A join storm: the speakers join first and talk; the listeners join over --ramp while media flows.
    var storm = false
    /// --relay-cpus / --load-cpus: the CPUs the spawned relay (and the raw forwarder) and this generator run on.
    var relayCPUs: [Int]?
    var loadCPUs: [Int]?
    /// `--server A,B,…`: the nodes of a cluster; room r is opened through node r mod N, its other members join through
    /// the others (a node that does not have the room sends them to the one that does).
    var servers: [PeerAddress] = []

    static let usage = """
        usage: parley-load [--server HOST:PORT[,HOST:PORT…] [--relay-pid PID] | --spawn [--workers N]] --rooms R --members M --speakers S
                           --duration SECONDS [--mode forward|mix|hybrid] [--ramp SECONDS] [--json FILE] [--raw-baseline [--blocks N]]
                           [--find-max [--find-max-cap SECONDS]] [--late-ms MS] [--max-tick-lateness-ms MS] [--cleartext] [--audience] [--storm]
                           [--relay-cpus LIST] [--load-cpus LIST]
               parley-load --self-check
          Simulated members (one UDP socket each, loopback) join through Parley signalling; S per room send pre-encoded
          Opus speech every 20 ms with a send timestamp (RTP header extension id 2); every member accounts for what it
          receives. Delivery is over the members asked for: a member refused, or admitted after media started, counts
          as not delivered for every packet it missed.
          --spawn starts parley-relay from this build folder with limits that fit the shape (members per room, rooms,
          joins per second over the --ramp, default 1 s).
          --raw-baseline also runs the same members through a minimal recvmmsg→sendmmsg forwarder (this program in a
          process of its own, same socket buffers as the relay), in N blocks per side alternating with Parley
          (P R R P …, default 2; --duration is split among them); both sides' CPU is every thread of their process.
          It reports each block and Parley's output packets per CPU-second as a ratio of the forwarder's: pooled, and
          the median of the block pairs.
          Members speak the encrypted protocol (Noise handshake, SRTP both ways; a packet counts as delivered only when
          it authenticates). --cleartext: the debugging protocol instead (the spawned relay runs --allow-cleartext), to
          see what encryption costs.
          --audience: audience rooms (the token claim): every member but the speakers joins without the publish grant
          and is counted, not announced to the room one by one.
          --storm: the speakers join first; the listeners join over --ramp while the speakers talk, so join times and
          latency are measured during the storm (delivery counts, for each listener, what was sent after its welcome).
          --server with several nodes of a cluster: each room is opened through one node (room r through node r mod N)
          and its other members join through the others, which send them to the room's node (code 60); redirects are
          counted.
          --relay-cpus LIST / --load-cpus LIST (CPU numbers as taskset takes them: 0 or 0,2 or 0-1): pins the spawned
          relay and the raw forwarder to the first list and this generator to the second, so neither steals the
          other's core (--relay-cpus 0 --load-cpus 1 on 2 cores).
          --late-ms: one-way latency above which a packet counts as late (default 20).
          --max-tick-lateness-ms: if 1 % or more of this generator's 20 ms send ticks (the 99th percentile) run later
          than this (default 10), the run measured the generator, not the relay, and says so; a lone late tick (the
          machine preempting it once) does not. The report shows the 99th percentile and the worst tick.
          --self-check: checks the delivery accounting and the verdict rules, and exits.
          Exit status: 0 the figures stand; 1 the run could not be made; 2 usage; 3 members were missing (refused, or not
          admitted when media started); 4 the generator's send ticks ran late; 5 both. --find-max exits 0 when the relay's
          delivery or latency ended the search, 3/4/5 when missing members or the generator did.
        """

    /// "0", "0,2", "0-1,3" → the CPU numbers (sorted, once each); nil when malformed or empty.
    static func cpus(_ text: String) -> [Int]? {
        var out = Set<Int>()
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let ends = part.split(separator: "-", omittingEmptySubsequences: false).map { Int($0) }
            guard ends.count <= 2, let low = ends.first ?? nil, let high = ends.last ?? nil, low >= 0, low <= high,
                  high < 1024 else { return nil }
            out.formUnion(low...high)
        }
        return out.isEmpty ? nil : out.sorted()
    }

    static func parseOrExit(_ arguments: some Sequence<String>) -> Options {
        var o = Options()
        var rest = arguments.makeIterator()
        func value(_ flag: String) -> String {
            guard let v = rest.next() else { exitWithUsage("\(flag) needs a value") }
            return v
        }
        func positive(_ flag: String) -> Int {
            guard let v = Int(value(flag)), v > 0 else { exitWithUsage("\(flag) needs a positive integer") }
            return v
        }
        func seconds(_ flag: String) -> Double {
            guard let v = Double(value(flag)), v >= 0 else { exitWithUsage("\(flag) needs a number of seconds") }
            return v
        }
        func cpuList(_ flag: String) -> [Int] {
            guard let cpus = Options.cpus(value(flag)) else {
                exitWithUsage("\(flag) needs CPU numbers: 0, 0,2 or 0-1")
            }
            return cpus
        }
        func milliseconds(_ flag: String) -> Double {
            guard let v = Double(value(flag)), v >= 0 else { exitWithUsage("\(flag) needs a number of milliseconds") }
            return v
        }
        while let flag = rest.next() {
            switch flag {
            case "-h", "--help": print(usage); exit(0)
            case "--server":
                let list = value(flag).split(separator: ",").map { PeerAddress(parsing: String($0)) }
                guard let first = list.first ?? nil, list.allSatisfy({ $0 != nil }) else { exitWithUsage("--server must be HOST:PORT[,HOST:PORT…]") }
                o.target = .server(first)
                o.servers = list.compactMap { $0 }
            case "--spawn": o.target = .spawn
            case "--workers": o.workers = positive(flag)
            case "--rooms": o.rooms = positive(flag)
            case "--members": o.members = positive(flag)
            case "--speakers": o.speakers = positive(flag)
            case "--duration": o.duration = seconds(flag)
            case "--ramp": o.ramp = seconds(flag)
            case "--mode":
                o.mode = value(flag)
                if !RoomMode.isValid(o.mode) { exitWithUsage("--mode must be \(RoomMode.choices)") }
            case "--json": o.json = value(flag)
            case "--relay-pid": o.relayPID = Int32(positive(flag))
            case "--raw-baseline": o.rawBaseline = true
            case "--find-max": o.findMax = true
            case "--find-max-cap": o.findMaxCap = seconds(flag)
            case "--late-ms": o.lateMilliseconds = milliseconds(flag)
            case "--max-tick-lateness-ms": o.maxTickLatenessMilliseconds = milliseconds(flag)
            case "--blocks": o.blocks = positive(flag)
            case "--self-check": o.selfCheck = true
            case "--cleartext": o.cleartext = true
            case "--audience": o.audience = true
            case "--storm": o.storm = true
            case "--relay-cpus": o.relayCPUs = cpuList(flag)
            case "--load-cpus": o.loadCPUs = cpuList(flag)
            default: exitWithUsage("unknown option \(flag)")
            }
        }
        if o.members < 2 { exitWithUsage("--members must be at least 2") }
        if o.speakers > o.members { exitWithUsage("--speakers cannot exceed --members") }
        if o.duration <= 0 { exitWithUsage("--duration must be positive") }
        return o
    }

    static func exitWithUsage(_ problem: String) -> Never {
        writeLine("parley-load: \(problem)\n\(usage)", fd: 2)
        exit(2)
    }
}
