#!/usr/bin/env python3
"""A non-browser WebRTC client for Parley's interop tests: aiortc (PyPI) publishing with WHIP or listening with WHEP.

    aiortc_client.py --url http://127.0.0.1:7480/v1/rooms/ROOM/whip --token T --seconds 6 --tone 523
    aiortc_client.py --url http://127.0.0.1:7480/v1/rooms/ROOM/whep --token T --seconds 6 --record heard.wav

It posts its offer (application/sdp, Bearer token), applies the answer, runs for --seconds, DELETEs the session's
Location and prints one JSON line: {"status", "location", "connection", "ice", "frames"} (frames: audio frames sent
or received). Exit 0 when the connection reached "connected".
"""
import argparse
import asyncio
import fractions
import json
import math
import sys
import urllib.error
import urllib.request
import wave

import av
from aiortc import MediaStreamTrack, RTCPeerConnection, RTCSessionDescription


class Tone(MediaStreamTrack):
    """A sine tone at 48 kHz mono, 20 ms frames, paced in real time."""
    kind = "audio"

    def __init__(self, frequency):
        super().__init__()
        self.frequency, self.sent, self.start = frequency, 0, None

    async def recv(self):
        loop = asyncio.get_event_loop()
        if self.start is None:
            self.start = loop.time()
        wait = self.start + self.sent * 0.02 - loop.time()
        if wait > 0:
            await asyncio.sleep(wait)
        samples = [int(8000 * math.sin(2 * math.pi * self.frequency * (self.sent * 960 + i) / 48000)) for i in range(960)]
        frame = av.AudioFrame(format="s16", layout="mono", samples=960)
        frame.planes[0].update(b"".join(s.to_bytes(2, "little", signed=True) for s in samples))
        frame.sample_rate, frame.pts, frame.time_base = 48000, self.sent * 960, fractions.Fraction(1, 48000)
        self.sent += 1
        return frame


def http(method, url, token, body=None):
    request = urllib.request.Request(url, data=body, method=method, headers={"Authorization": "Bearer " + token})
    if body is not None:
        request.add_header("Content-Type", "application/sdp")
    try:
        with urllib.request.urlopen(request, timeout=5) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


async def run(args):
    pc = RTCPeerConnection()
    states = {"connection": "new", "ice": "new"}
    received = {"frames": 0}
    tone = None
    recording = wave.open(args.record, "wb") if args.record else None
    if recording:
        recording.setnchannels(1)
        recording.setsampwidth(2)
        recording.setframerate(48000)

    @pc.on("connectionstatechange")
    def _():
        if pc.connectionState == "connected" or states["connection"] != "connected":
            states["connection"] = pc.connectionState

    @pc.on("iceconnectionstatechange")
    def _():
        states["ice"] = pc.iceConnectionState

    @pc.on("track")
    def _(track):
        async def consume():
            resampler = av.AudioResampler(format="s16", layout="mono", rate=48000)
            while True:
                try:
                    frame = await track.recv()
                except Exception:
                    return
                received["frames"] += 1
                if recording:
                    for out in resampler.resample(frame):
                        recording.writeframes(bytes(out.planes[0])[: out.samples * 2])
        asyncio.ensure_future(consume())

    if args.tone:
        tone = Tone(args.tone)
        pc.addTransceiver(tone, direction="sendonly")
    else:
        pc.addTransceiver("audio", direction="recvonly")
    await pc.setLocalDescription(await pc.createOffer())
    base = args.url.split("/v1/")[0]
    status, headers, answer = http("POST", args.url, args.token, pc.localDescription.sdp.encode())
    result = {"status": status, "location": headers.get("Location")}
    if status != 201:
        result["error"] = answer
        print(json.dumps(result))
        await pc.close()
        return 1
    await pc.setRemoteDescription(RTCSessionDescription(sdp=answer, type="answer"))
    await asyncio.sleep(args.seconds)
    result.update(states)
    result["frames"] = tone.sent if tone else received["frames"]
    http("DELETE", base + headers["Location"], args.token)
    await pc.close()
    if recording:
        recording.close()
    print(json.dumps(result))
    return 0 if result["connection"] == "connected" else 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--seconds", type=float, default=6)
    parser.add_argument("--tone", type=float)
    parser.add_argument("--record")
    args = parser.parse_args()
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
