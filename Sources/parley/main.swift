// parley: the Parley client. Subcommands: token (mint a join token), join (a room).
import Foundation
import ParleyAudioIO
import ParleyNet

let usage = """
usage: parley <command> [options]

commands:
  token    mint a join token                      (parley token --help)
  join     join a room and talk/listen            (parley join --help)
  listen   stay online for one-to-one calls       (parley listen --help)
  call     call someone who is online             (parley call --help)
  message  send a direct text to someone online   (parley message --help)
  devices  list ALSA PCM devices
  rooms    list, create or delete rooms (HTTP API)  (parley rooms --help)
  members  list a room's members (HTTP API)
  kick     kick a member (HTTP API)
  mute     mute or unmute a member (HTTP API)
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
case "listen": exit(CallCommands.listen(args))
case "call": exit(CallCommands.call(args))
case "message": exit(CallCommands.message(args))
case "rooms": exit(ApiCommands.rooms(args))
case "members": exit(ApiCommands.members(args))
case "kick": exit(ApiCommands.kick(args))
case "mute": exit(ApiCommands.mute(args))
case "devices":
    for d in AlsaDevice.list() { writeLine("\(d.name)\t\(d.description)") }
    exit(0)
case "-h", "--help", "help": writeLine(usage); exit(0)
default: fail("unknown command \(command)\n\(usage)")
}
