// parley: the Parley client. Subcommands: token (mint a join token), join (a room).
import Foundation
import ParleyAudioIO
import ParleyNet
import ParleyWire

let usage = """
usage: parley <command> [options]

commands:
  token    mint a join token                      (parley token --help)
  join     join a room and talk/listen            (parley join --help)
  say      send one text to a room and leave      (parley say --help)
  listen   stay online for one-to-one calls       (parley listen --help)
  call     call someone who is online             (parley call --help)
  message  send a direct text or image (kept for later when they are away)   (parley message --help)
  chat     accept or decline a chat request       (parley chat --help)
  history  a room's texts, newest first (HTTP API)
  devices  list ALSA PCM devices
  rooms    list, create or delete rooms (HTTP API)  (parley rooms --help)
  members  list a room's members (HTTP API)
  kick     kick a member (HTTP API)
  mute     mute or unmute a member (HTTP API)
  record   start, stop, list and download room recordings (HTTP API)

options: -h/--help (also after a command), --version

exit codes: 0 done, 1 local error (device, file), 2 usage, 3 refused by the relay, 4 removed by the relay,
  5 relay unreachable; call: 6 declined, 7 no answer, 8 unavailable, 9 failed; message, say: 10 not delivered;
  11 the relay did not prove it holds the expected key (--relay-key, or the token's relay_key)

environment:
  PARLEY_API_KEY / PARLEY_API_SECRET   sign the tokens every command mints (the relay's dev defaults when unset)
  PARLEY_URL                           the relay's HTTP API for rooms/members/kick/mute/record and images on texts
                                       (default http://127.0.0.1:7480; https:// checks the certificate against the
                                       system's CA store)
  PARLEY_TIMELINE=1                    print the monotonic time of the first sent and first played frame (stderr)
"""

let devicesUsage = """
usage: parley devices

Lists the ALSA PCM devices (name, tab, description) to pass to --device, --capture-device or --playback-device.
With no sound card the list may be empty: use --tone HZ or --input FILE.wav to send, --output FILE.wav or --no-playback
to receive (parley join ROOM --listen-only --output FILE.wav only listens), or an ALSA configuration such as
Samples/asoundrc.
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
case "say": exit(SayCommand.run(args))
case "listen": exit(CallCommands.listen(args))
case "call": exit(CallCommands.call(args))
case "message": exit(CallCommands.message(args))
case "chat": exit(CallCommands.chat(args))
case "history": exit(ApiCommands.history(args))
case "rooms": exit(ApiCommands.rooms(args))
case "members": exit(ApiCommands.members(args))
case "kick": exit(ApiCommands.kick(args))
case "mute": exit(ApiCommands.mute(args))
case "record": exit(ApiCommands.record(args))
case "devices":
    _ = Options(args, valued: [], switches: [], usage: devicesUsage)
    for d in AlsaDevice.list() { writeLine("\(d.name)\t\(d.description)") }
    exit(0)
case "-h", "--help", "help": writeLine(usage); exit(0)
case "--version", "version": writeLine("parley \(ParleyVersion.string)"); exit(0)
default: fail("unknown command \(command)\n\(usage)")
}
