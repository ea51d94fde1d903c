// Parley's sample web client: joins a room as a WebRTC member through the relay's combined endpoint
// (POST /v1/rooms/{room}/webrtc with the SDP offer and a member token; DELETE the Location to leave).
// Plain JavaScript, no build step. URL parameters fill the form: ?room=R&token=T&join=1 joins at once;
// &listen=1 joins without a microphone; &raw=1 turns the browser's voice processing off; &report=SECONDS logs getStats once a second and then "PARLEY RESULT {...}"
// to the console and closes the page (how the tests drive it).
'use strict';
const $ = id => document.getElementById(id);
const params = new URLSearchParams(location.search);
let pc = null, session = null, micTrack = null, statsTimer = null, joinStartedAt = 0;

function log(...parts) {
  const line = parts.map(p => typeof p === 'string' ? p : JSON.stringify(p)).join(' ');
  console.log('PARLEY ' + line);
  $('log').textContent += line + '\n';
}
function status(text) { $('status').textContent = text; }

async function join() {
  const room = $('room').value.trim(), token = $('token').value.trim();
  if (!room || !token) { status('room and token are needed'); return; }
  $('join').disabled = true;
  joinStartedAt = performance.now();
  try {
    pc = new RTCPeerConnection();
    pc.onconnectionstatechange = () => { status(pc.connectionState); log('connection', pc.connectionState); };
    pc.ontrack = e => { $('remote').srcObject = e.streams[0] || new MediaStream([e.track]); };
    if (params.get('listen') === '1') {
      pc.addTransceiver('audio', { direction: 'recvonly' });
    } else {
      // &raw=1: the microphone as it is (no echo canceller, noise suppressor or gain control): tests measure the path.
      const processed = params.get('raw') !== '1';
      const stream = await navigator.mediaDevices.getUserMedia({
        audio: { echoCancellation: processed, noiseSuppression: processed, autoGainControl: processed },
      });
      micTrack = stream.getAudioTracks()[0];
      pc.addTransceiver(micTrack, { direction: 'sendrecv', streams: [stream] });
    }
    await pc.setLocalDescription(await pc.createOffer());
    // ICE-lite relay: no trickle. Its one candidate is in the answer; the browser's address is learnt from its checks.
    const response = await fetch(`/v1/rooms/${encodeURIComponent(room)}/webrtc`, {
      method: 'POST', headers: { 'Content-Type': 'application/sdp', 'Authorization': 'Bearer ' + token }, body: pc.localDescription.sdp,
    });
    if (response.status !== 201) {
      const text = await response.text();
      let reason = text;
      try { reason = JSON.parse(text).error.message; } catch (_) {}
      throw new Error(`${response.status}: ${reason}`);
    }
    session = { url: new URL(response.headers.get('Location'), location.href).href, token };
    await pc.setRemoteDescription({ type: 'answer', sdp: await response.text() });
    status('connecting');
    $('leave').disabled = false; $('mute').disabled = !micTrack;
    statsTimer = setInterval(showStats, 250);
  } catch (e) {
    log('join failed:', e.message);
    status('join failed: ' + e.message);
    await leave();
  }
}

async function leave() {
  clearInterval(statsTimer);
  if (session) {
    await fetch(session.url, { method: 'DELETE', headers: { 'Authorization': 'Bearer ' + session.token } }).catch(() => {});
    session = null;
  }
  if (micTrack) { micTrack.stop(); micTrack = null; }
  if (pc) { pc.close(); pc = null; }
  $('join').disabled = false; $('leave').disabled = true; $('mute').disabled = true;
  status('not connected');
}

function toggleMute() {
  if (!micTrack) return;
  micTrack.enabled = !micTrack.enabled;
  $('mute').textContent = micTrack.enabled ? 'Mute' : 'Unmute';
}

async function stats() {
  const report = await pc.getStats();
  const all = [...report.values()];
  const inbound = all.find(s => s.type === 'inbound-rtp' && s.kind === 'audio') || {};
  const outbound = all.find(s => s.type === 'outbound-rtp' && s.kind === 'audio') || {};
  const source = all.find(s => s.type === 'media-source' && s.kind === 'audio') || {};
  const transport = all.find(s => s.type === 'transport') || {};
  return {
    packetsReceived: inbound.packetsReceived || 0, packetsLost: inbound.packetsLost || 0, jitter: inbound.jitter,
    audioLevel: inbound.audioLevel || 0, totalAudioEnergy: inbound.totalAudioEnergy || 0,
    concealedSamples: inbound.concealedSamples || 0, totalSamplesReceived: inbound.totalSamplesReceived || 0,
    packetsSent: outbound.packetsSent || 0, micLevel: source.audioLevel || 0,
    dtlsState: transport.dtlsState, srtpCipher: transport.srtpCipher, tlsVersion: transport.tlsVersion,
  };
}

async function showStats() {
  if (!pc) return;
  const s = await stats();
  $('in-level').style.width = Math.min(100, s.audioLevel * 300) + '%';
  $('out-level').style.width = Math.min(100, s.micLevel * 300) + '%';
}

// Test driver: ?report=SECONDS.
async function report(seconds) {
  let last = {}, maxLevel = 0, firstAudioMs = null;
  for (let i = 0; i < seconds * 4; i++) {
    await new Promise(r => setTimeout(r, 250));
    if (!pc) break;
    last = await stats();
    maxLevel = Math.max(maxLevel, last.audioLevel);
    if (firstAudioMs === null && last.packetsReceived > 0) firstAudioMs = Math.round(performance.now() - joinStartedAt);
    if (i % 4 === 3) log('stats', last);
  }
  log('RESULT', Object.assign({ maxAudioLevel: maxLevel, firstPacketMs: firstAudioMs, state: pc ? pc.connectionState : 'closed' }, last));
  await leave();
  window.close();
}

$('join').onclick = join;
$('leave').onclick = leave;
$('mute').onclick = toggleMute;
if (params.get('room')) $('room').value = params.get('room');
if (params.get('token')) $('token').value = params.get('token');
if (params.get('join') === '1') {
  join().then(() => { if (params.get('report')) report(Number(params.get('report'))); });
}
