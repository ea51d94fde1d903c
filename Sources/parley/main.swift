// parley: the Parley client. Subcommands: token (mint a join token), join (a room).
import Foundation
import ParleyNet

let usage = """
usage: parley <command> [options]

commands:
  token   mint a join token            (parley token --help)
  join    join a room and talk/listen  (parley join --help)
"""

var args = Array(CommandLine.arguments.dropFirst())
guard let command = args.first else {
    writeLine(usage, fd: 2)
    exit(2)
}
args.removeFirst()
switch command {
case "token": exit(TokenCommand.run(args))
case "join": exit(JoinCommand.run(args))
case "-h", "--help", "help": writeLine(usage); exit(0)
default: fail("unknown command \(command)\n\(usage)")
}
