// Parley's sample web client: joins a room as a WebRTC member through the relay's combined endpoint
// (POST /v1/rooms/{room}/webrtc with the SDP offer and a member token; DELETE the Location to leave), follows the
// room through its event stream (GET /v1/rooms/{room}/events: members, speakers, texts), lists who is there
// (GET …/members) and sends texts (POST …/messages). Without a token it asks the relay for one
// (POST /v1/dev-token), which only a relay running with the public dev credentials answers.
// Plain JavaScript, no build step. URL parameters fill the form: ?room=R&token=T&join=1 joins at once;
// &say=TEXT sends a text once connected; &listen=1 joins without a microphone; &raw=1 turns the browser's voice processing off; &report=SECONDS logs getStats once a second and then "PARLEY RESULT {...}"
// to the console and closes the page (how the tests drive it).
'use strict';
const $ = id => document.getElementById(id);
const params = new URLSearchParams(location.search);
let pc = null, session = null, micTrack = null, statsTimer = null, joinStartedAt = 0, events = null;
const members = new Map();  // identity → {name, muted, speaking}
const textsReceived = [];   // [from, text], for the test driver

function log(...parts) {
  const line = parts.map(p => typeof p === 'string' ? p : JSON.stringify(p)).join(' ');
  console.log('PARLEY ' + line);
  $('log').textContent += line + '\n';
}
function status(text) { $('status').textContent = text; }

async function devToken(room, identity) {
  const r = await fetch('/v1/dev-token', { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ room, identity }) });
  if (r.status !== 201) throw new Error('no token: paste one (parley token --identity NAME --room ' + room + ')');
  return (await r.json()).token;
}

function api(path, options = {}) {
  options.headers = Object.assign({ 'Authorization': 'Bearer ' + session.token }, options.headers || {});
  return fetch(`/v1/rooms/${encodeURIComponent(session.room)}${path}`, options);
}

async function join() {
  const room = $('room').value.trim();
  let token = $('token').value.trim();
  if (!room) { status('a room name is needed'); return; }
  $('join').disabled = true;
  joinStartedAt = performance.now();
  try {
    if (!token) token = await devToken(room, $('identity').value.trim() || 'web-' + Math.random().toString(36).slice(2, 7));
    pc = new RTCPeerConnection();
    pc.onconnectionstatechange = () => { status(pc.connectionState); log('connection', pc.connectionState); };
    // One track per forwarding slot (a forward room sends the loudest speakers, each on a track of its own while it
    // is forwarded; a mix room one track, the mix): each plays through an audio element of its own.
    pc.ontrack = e => {
      const audio = new Audio();
      audio.srcObject = new MediaStream([e.track]);
      audio.play().catch(err => log('cannot play:', err.message));
      document.body.appendChild(audio);
    };
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
    // Two more receive-only sections: the relay's further forwarding slots (it answers as many as the room has).
    for (let i = 0; i < 2; i++) pc.addTransceiver('audio', { direction: 'recvonly' });
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
    session = { url: new URL(response.headers.get('Location'), location.href).href, token, room };
    await pc.setRemoteDescription({ type: 'answer', sdp: await response.text() });
    status('connecting');
    $('leave').disabled = false; $('mute').disabled = !micTrack; $('text').disabled = false; $('send').disabled = false;
    followRoom();
    statsTimer = setInterval(showStats, 250);
  } catch (e) {
    log('join failed:', e.message);
    status('join failed: ' + e.message);
    await leave();
  }
}

// The room: its member list once, then its event stream (fetch, so the token goes in a header; EventSource cannot).
async function followRoom() {
  const list = await (await api('/members')).json();
  members.clear();
  for (const m of list.members || []) members.set(m.identity, { name: m.name, muted: m.muted, speaking: m.speaking });
  showMembers();
  events = new AbortController();
  try {
    const r = await api('/events', { signal: events.signal });
    const reader = r.body.getReader(), decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end); buffer = buffer.slice(end + 2);
        const data = block.split('\n').find(l => l.startsWith('data: '));
        if (data) roomEvent(JSON.parse(data.slice(6)));
      }
    }
  } catch (e) { if (e.name !== 'AbortError') log('events ended:', e.message); }
}

function roomEvent(e) {
  switch (e.type) {
    case 'member_joined': members.set(e.identity, { name: e.detail || e.identity, muted: false, speaking: false }); break;
    case 'member_left': members.delete(e.identity); log(`${e.identity} left` + (e.detail ? ` (${e.detail})` : '')); break;
    case 'member_muted': case 'member_unmuted': {
      const m = members.get(e.identity); if (m) m.muted = e.type === 'member_muted'; break;
    }
    case 'speakers': {
      const speaking = new Set((e.detail || '').split(',').filter(Boolean));
      for (const [id, m] of members) m.speaking = speaking.has(id);
      break;
    }
    case 'text': showText(e.identity, e.detail); break;
    case 'room_closed': log('the room was closed: ' + (e.detail || '')); break;
  }
  showMembers();
}

function showMembers() {
  const ul = $('members');
  ul.textContent = '';
  for (const [id, m] of members) {
    const li = document.createElement('li');
    li.textContent = m.name && m.name !== id ? `${m.name} (${id})` : id;
    if (m.speaking) li.className = 'speaking';
    if (m.muted) li.classList.add('muted');
    ul.appendChild(li);
  }
}

function showText(from, text) {
  textsReceived.push([from, text]);
  const div = document.createElement('div'), who = document.createElement('b');
  who.textContent = from;
  div.append(who, document.createTextNode(text));  // text nodes: a text is never markup
  $('texts').appendChild(div);
  $('texts').scrollTop = 1e9;
}

async function sendText() {
  const text = $('text').value;
  if (!text || !session) return;
  const r = await api('/messages', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ text }) });
  if (r.ok) { $('text').value = ''; } else { log('text not sent:', await r.text()); }
}

async function leave() {
  clearInterval(statsTimer);
  if (events) { events.abort(); events = null; }
  if (session) {
    await fetch(session.url, { method: 'DELETE', headers: { 'Authorization': 'Bearer ' + session.token } }).catch(() => {});
    session = null;
  }
  if (micTrack) { micTrack.stop(); micTrack = null; }
  if (pc) { pc.close(); pc = null; }
  $('join').disabled = false; $('leave').disabled = true; $('mute').disabled = true;
  $('text').disabled = true; $('send').disabled = true;
  members.clear(); showMembers();
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
  const inbounds = all.filter(s => s.type === 'inbound-rtp' && s.kind === 'audio');
  // The busiest track stands for "the room" in the single figures; every track is listed in `tracks`.
  const inbound = inbounds.reduce((a, b) => ((b.packetsReceived || 0) > (a.packetsReceived || 0) ? b : a), {});
  const outbound = all.find(s => s.type === 'outbound-rtp' && s.kind === 'audio') || {};
  const source = all.find(s => s.type === 'media-source' && s.kind === 'audio') || {};
  const transport = all.find(s => s.type === 'transport') || {};
  return {
    packetsReceived: inbound.packetsReceived || 0, packetsLost: inbound.packetsLost || 0, jitter: inbound.jitter,
    audioLevel: inbound.audioLevel || 0, totalAudioEnergy: inbound.totalAudioEnergy || 0,
    concealedSamples: inbound.concealedSamples || 0, totalSamplesReceived: inbound.totalSamplesReceived || 0,
    packetsSent: outbound.packetsSent || 0, micLevel: source.audioLevel || 0,
    dtlsState: transport.dtlsState, srtpCipher: transport.srtpCipher, tlsVersion: transport.tlsVersion,
    tracks: inbounds.map(s => ({ ssrc: s.ssrc, packetsReceived: s.packetsReceived || 0, packetsLost: s.packetsLost || 0,
                                 audioLevel: s.audioLevel || 0 })),
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
  const trackLevels = {};  // ssrc → the loudest level seen on that track
  // Join to first audio: the first received packet, polled every 10 ms (inbound-rtp appears with it).
  for (let i = 0; i < 500 && pc && firstAudioMs === null && params.get('listen') === '1'; i++) {
    const s = await stats();
    if (s.packetsReceived > 0) firstAudioMs = Math.round(performance.now() - joinStartedAt);
    else await new Promise(r => setTimeout(r, 10));
  }
  for (let i = 0; i < seconds * 4; i++) {
    await new Promise(r => setTimeout(r, 250));
    if (!pc) break;
    last = await stats();
    maxLevel = Math.max(maxLevel, last.audioLevel);
    for (const t of last.tracks || []) trackLevels[t.ssrc] = Math.max(trackLevels[t.ssrc] || 0, t.audioLevel);
    if (firstAudioMs === null && last.packetsReceived > 0) firstAudioMs = Math.round(performance.now() - joinStartedAt);
    if (i % 4 === 3) log('stats', last);
    if (i === 8 && params.get('say')) { $('text').value = params.get('say'); await sendText(); }
  }
  log('RESULT', Object.assign({ maxAudioLevel: maxLevel, firstPacketMs: firstAudioMs, state: pc ? pc.connectionState : 'closed',
    members: [...members.keys()], texts: textsReceived, trackLevels }, last));
  await leave();
  window.close();
}

$('join').onclick = join;
$('leave').onclick = leave;
$('mute').onclick = toggleMute;
$('send').onclick = sendText;
$('text').onkeydown = e => { if (e.key === 'Enter') sendText(); };
if (params.get('room')) $('room').value = params.get('room');
if (params.get('token')) $('token').value = params.get('token');
if (params.get('identity')) $('identity').value = params.get('identity');
if (params.get('join') === '1') {
  join().then(() => { if (params.get('report')) report(Number(params.get('report'))); });
}
