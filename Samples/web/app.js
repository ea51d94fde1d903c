// Parley's sample web client: joins a room as a WebRTC member through the relay's combined endpoint
// (POST /v1/rooms/{room}/webrtc with the SDP offer and a member token; DELETE the Location to leave), follows the
// room through its event stream (GET /v1/rooms/{room}/events: members, speakers, texts), lists who is there
// (GET …/members) and sends texts (POST …/messages). Without a token it asks the relay for one
// (POST /v1/dev-token), which only a relay running with the public dev credentials answers.
// Images: a text's `attachments` are fetched with the page's token (GET /v1/attachments/{id}) and shown inline from a
// blob; the file picker beside the text box uploads an image (POST /v1/attachments) and sends its id in a room text.
// Calls: "Be reachable" opens the page's presence stream (GET /v1/presence/events): while it is open the page is
// online as its token's identity, a `parley call` to it rings here, and it can call anyone online. Calls go through
// /v1/presence/{stream}/calls; an answered call gives a token for a private call room, joined like a room.
// Plain JavaScript, no build step. URL parameters fill the form: ?room=R&token=T&join=1 joins at once;
// &say=TEXT sends a text once connected (&image=1: with a 2×2 PNG drawn on a canvas, as if picked); &listen=1 joins without a microphone; &raw=1 turns the browser's voice
// processing off; &report=SECONDS logs getStats once a second and then "PARLEY RESULT {...}" to the console and
// closes the page (how the tests drive it). For calls: &online=1 is reachable at once; &call=NAME calls NAME once
// online; &answer=1 / &reject=1 answer or reject the first call that rings; &hangup=SECONDS hangs up that long into
// a call; &callreport=SECONDS logs "PARLEY RESULT {...}" when the call ended or that long after it was answered.
'use strict';
const $ = id => document.getElementById(id);
const params = new URLSearchParams(location.search);
let pc = null, session = null, micTrack = null, statsTimer = null, joinStartedAt = 0, events = null;
const members = new Map();  // identity → {name, muted, speaking}
const textsReceived = [];   // [from, text], for the test driver
const imagesShown = [];     // [from, id, bytes]: images fetched and shown, for the test driver
const attachmentID = /^[A-Za-z0-9_-]{22}$/;  // what the relay hands out (and the only thing put in a URL here)
let audience = 0;           // an audience room's listeners (counted, not listed)
let presence = null;        // {token, stream, abort}: the page is reachable for calls
let call = null;            // {id, peer, incoming, state, link}: the call ringing or under way (one at a time)
const callLog = [];         // [state, reason], for the test driver

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

// One WebRTC member: a PeerConnection whose offer goes to POST /v1/rooms/{room}/webrtc. Sends the microphone
// (unless `listen`) and receives the room on up to `slots` tracks, each played by an audio element of its own.
// Returns {pc, url, micTrack, audios}; throws with the relay's reason when refused.
async function connect(room, token, { listen = false, slots = 3, onState = () => {} } = {}) {
  const link = { pc: new RTCPeerConnection(), url: null, micTrack: null, audios: [] };
  const pc = link.pc;
  try {
    pc.onconnectionstatechange = () => onState(pc.connectionState);
    // One track per forwarding slot (a forward room sends the loudest speakers, each on a track of its own while it
    // is forwarded; a mix room one track, the mix): each plays through an audio element of its own.
    pc.ontrack = e => {
      const audio = new Audio();
      audio.srcObject = new MediaStream([e.track]);
      audio.play().catch(err => log('cannot play:', err.message));
      document.body.appendChild(audio);
      link.audios.push(audio);
    };
    if (listen) {
      pc.addTransceiver('audio', { direction: 'recvonly' });
    } else {
      // &raw=1: the microphone as it is (no echo canceller, noise suppressor or gain control): tests measure the path.
      const processed = params.get('raw') !== '1';
      const stream = await navigator.mediaDevices.getUserMedia({
        audio: { echoCancellation: processed, noiseSuppression: processed, autoGainControl: processed },
      });
      link.micTrack = stream.getAudioTracks()[0];
      pc.addTransceiver(link.micTrack, { direction: 'sendrecv', streams: [stream] });
    }
    // More receive-only sections: the relay's further forwarding slots (it answers as many as the room has).
    for (let i = 1; i < slots; i++) pc.addTransceiver('audio', { direction: 'recvonly' });
    await pc.setLocalDescription(await pc.createOffer());
    // ICE-lite relay: no trickle. Its one candidate is in the answer; the browser's address is learnt from its checks.
    const response = await fetch(`/v1/rooms/${encodeURIComponent(room)}/webrtc`, {
      method: 'POST', headers: { 'Content-Type': 'application/sdp', 'Authorization': 'Bearer ' + token }, body: pc.localDescription.sdp,
    });
    if (response.status !== 201) throw new Error(`${response.status}: ${await reason(response)}`);
    link.url = new URL(response.headers.get('Location'), location.href).href;
    await pc.setRemoteDescription({ type: 'answer', sdp: await response.text() });
    return link;
  } catch (e) {
    await disconnect(link, token);
    throw e;
  }
}

// Ends a member: DELETE its Location (the relay drops it at once), closes the PeerConnection, stops the microphone.
async function disconnect(link, token) {
  if (!link) return;
  if (link.url) await fetch(link.url, { method: 'DELETE', headers: { 'Authorization': 'Bearer ' + token } }).catch(() => {});
  link.url = null;
  if (link.micTrack) link.micTrack.stop();
  link.pc.close();
  for (const a of link.audios) a.remove();
}

// The relay's reason for a refusal, from its JSON error.
async function reason(response) {
  const text = await response.text();
  try { return JSON.parse(text).error.message; } catch (_) { return text; }
}

async function join() {
  const room = $('room').value.trim();
  let token = $('token').value.trim();
  if (!room) { status('a room name is needed'); return; }
  $('join').disabled = true;
  joinStartedAt = performance.now();
  try {
    if (!token) token = await devToken(room, identity());
    const link = await connect(room, token, { listen: params.get('listen') === '1',
      onState: state => { status(state); log('connection', state); } });
    pc = link.pc; micTrack = link.micTrack;
    session = { url: link.url, token, room, link };
    status('connecting');
    $('leave').disabled = false; $('mute').disabled = !micTrack; $('text').disabled = false; $('send').disabled = false;
    $('image').disabled = false;
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
  // An audience room's listeners are counted, not listed (the `audience` events keep the count).
  for (const m of list.members || []) if (!m.audience) members.set(m.identity, { name: m.name, muted: m.muted, speaking: m.speaking });
  audience = (list.members || []).filter(m => m.audience).length;
  showRecording(list.recording);
  showMembers();
  // The room's last texts (kept by a relay with a state directory; none otherwise), oldest first.
  try {
    const history = await api('/messages?limit=20');
    if (history.ok) for (const m of ((await history.json()).messages || []).reverse()) showText(m.identity, m.text, m.attachments, session.token);
  } catch (_) { /* no history: nothing to show */ }
  events = new AbortController();
  try {
    await readEvents(await api('/events', { signal: events.signal }), roomEvent);
  } catch (e) { if (e.name !== 'AbortError') log('events ended:', e.message); }
}

// Reads server-sent events from a fetch response (fetch, so the token goes in a header; EventSource cannot).
async function readEvents(response, handle) {
  const reader = response.body.getReader(), decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end); buffer = buffer.slice(end + 2);
      const data = block.split('\n').find(l => l.startsWith('data: '));
      if (data) handle(JSON.parse(data.slice(6)));
    }
  }
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
    case 'text': showText(e.identity, e.detail || '', e.attachments, session && session.token); break;
    case 'room_closed': log('the room was closed: ' + (e.detail || '')); break;
    case 'stream_closed': log('the room\'s events ended: ' + (e.detail || '')); break;
    case 'audience': audience = Number(e.detail) || 0; break;
    case 'recording_started': showRecording(e.detail); log('this room is being recorded'); break;
    case 'recording_stopped': showRecording(null); log('the recording of this room stopped'); break;
  }
  showMembers();
}

// Whether the room is being recorded (the relay tells every member; the page shows it while it lasts).
function showRecording(id) {
  $('recording').textContent = id ? '● recording' : '';
  $('recording').title = id ? `recording ${id}` : '';
}

function showMembers() {
  const ul = $('members');
  ul.textContent = '';
  $('audience').textContent = audience > 0 ? `${audience} listening` : '';
  for (const [id, m] of members) {
    const li = document.createElement('li');
    li.textContent = m.name && m.name !== id ? `${m.name} (${id})` : id;
    if (m.speaking) li.className = 'speaking';
    if (m.muted) li.classList.add('muted');
    ul.appendChild(li);
  }
}

// A text as the page shows it: the sender in bold, the text as a text node, then its images (fetched with `token`).
function showText(from, text, attachments = [], token = null) {
  textsReceived.push([from, text]);
  const div = document.createElement('div'), who = document.createElement('b');
  who.textContent = from;
  div.append(who, document.createTextNode(text));  // text nodes: a text is never markup
  $('texts').appendChild(div);
  for (const id of attachments || []) showImage(div, from, id, token);
  $('texts').scrollTop = 1e9;
}

// One image of a text: fetched with the page's token (an <img src> cannot send it), checked to be an image, and shown
// from a blob URL, given back once the image has loaded. A failed fetch is a line of text in its place.
async function showImage(div, from, id, token) {
  const note = text => div.append(document.createElement('br'), document.createTextNode(text));
  if (typeof id !== 'string' || !attachmentID.test(id) || !token) { note('[an image that cannot be shown]'); return; }
  try {
    const r = await fetch(`/v1/attachments/${id}`, { headers: { 'Authorization': 'Bearer ' + token } });
    if (!r.ok) throw new Error(`${r.status}: ${await reason(r)}`);
    const blob = await r.blob();
    if (!/^image\/(png|jpeg|webp|gif)$/.test(blob.type)) throw new Error(`not an image (${blob.type || 'no type'})`);
    const img = document.createElement('img'), url = URL.createObjectURL(blob);
    img.alt = `image from ${from}`;
    img.onload = img.onerror = () => URL.revokeObjectURL(url);
    img.src = url;
    div.append(document.createElement('br'), img);
    imagesShown.push([from, id, blob.size]);
    $('texts').scrollTop = 1e9;
  } catch (e) {
    log(`image ${id} from ${from} not shown:`, e.message);
    note(`[image not shown: ${e.message}]`);
  }
}

// Sends the text box's text and the picked image (uploaded first: POST /v1/attachments answers its id).
async function sendText(file = $('image').files[0]) {
  const text = $('text').value;
  if ((!text && !file) || !session) return;
  const body = { text };
  if (file) {
    const up = await fetch('/v1/attachments', { method: 'POST', body: file,
      headers: { 'Authorization': 'Bearer ' + session.token, 'Content-Type': file.type || 'application/octet-stream' } });
    if (up.status !== 201) { log('image not sent:', `${up.status}: ${await reason(up)}`); return; }
    body.attachments = [(await up.json()).id];
  }
  const r = await api('/messages', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  if (r.ok) { $('text').value = ''; $('image').value = ''; } else { log('text not sent:', await r.text()); }
}

async function leave() {
  clearInterval(statsTimer);
  if (events) { events.abort(); events = null; }
  if (session) { await disconnect(session.link, session.token); session = null; }
  micTrack = null; pc = null;
  $('join').disabled = false; $('leave').disabled = true; $('mute').disabled = true;
  $('text').disabled = true; $('send').disabled = true; $('image').disabled = true; $('image').value = '';
  members.clear(); audience = 0; showRecording(null); showMembers();
  status('not connected');
}

function toggleMute() {
  if (!micTrack) return;
  micTrack.enabled = !micTrack.enabled;
  $('mute').textContent = micTrack.enabled ? 'Mute' : 'Unmute';
}

function identity() {
  if (!$('identity').value.trim()) $('identity').value = 'web-' + Math.random().toString(36).slice(2, 7);
  return $('identity').value.trim();
}

// ---- Calls ----

// The page's presence: its private event stream. Online while it is open; the first event names the stream.
async function goOnline() {
  if (presence) return;
  $('online').disabled = true;
  try {
    let token = $('token').value.trim();
    if (!token) token = await devToken($('room').value.trim() || 'lobby', identity());
    presence = { token, stream: null, abort: new AbortController() };
    const r = await fetch('/v1/presence/events', { headers: { 'Authorization': 'Bearer ' + token }, signal: presence.abort.signal });
    if (r.status !== 200) throw new Error(`${r.status}: ${await reason(r)}`);
    readEvents(r, presenceEvent).catch(e => { if (e.name !== 'AbortError') log('presence ended:', e.message); })
      .finally(() => { if (presence && presence.token === token) offline('the relay closed the stream'); });
  } catch (e) {
    log('cannot go online:', e.message);
    presence = null;
    $('online').disabled = false;
  }
}

function offline(why) {
  if (!presence) return;
  const p = presence;
  presence = null;
  p.abort.abort();
  if (p.stream) presenceAPI(p, '', { method: 'DELETE' }).catch(() => {});
  endCall(why);
  $('online').disabled = false; $('offline').disabled = true; $('callee').disabled = true; $('call').disabled = true;
  $('call-status').textContent = 'not reachable';
}

function presenceAPI(p, path, options = {}) {
  options.headers = Object.assign({ 'Authorization': 'Bearer ' + p.token, 'Content-Type': 'application/json' }, options.headers || {});
  return fetch(`/v1/presence/${p.stream}${path}`, options);
}

function presenceEvent(e) {
  switch (e.type) {
    case 'presence_online':
      presence.stream = e.detail;
      log(`reachable for calls as ${e.identity}`);
      $('call-status').textContent = `reachable as ${e.identity}`;
      $('offline').disabled = false; $('callee').disabled = false; $('call').disabled = false;
      if (params.get('call')) placeCall(params.get('call'));
      break;
    case 'presence_offline': offline(e.detail || 'offline'); break;
    case 'stream_closed': offline(e.detail || 'the token expired'); break;
    case 'incoming_call':
      call = { id: e.call.id, peer: e.identity, incoming: true, state: 'ringing', link: null };
      callLog.push(['incoming', e.identity]);
      showCall(`${e.detail || e.identity} is calling`);
      if (params.get('answer') === '1') answerCall(true);
      else if (params.get('reject') === '1') answerCall(false);
      break;
    case 'call_status': callStatus(e); break;
    case 'direct_text': showText(`${e.identity} (direct)`, e.detail || '', e.attachments, presence && presence.token); break;
  }
}

async function placeCall(callee) {
  callee = (callee || $('callee').value).trim();
  if (!presence || !presence.stream || call || !callee) return;
  call = { id: null, peer: callee, incoming: false, state: 'calling', link: null };
  showCall(`calling ${callee}…`);
  const r = await presenceAPI(presence, '/calls', { method: 'POST', body: JSON.stringify({ callee }) });
  if (r.status !== 202) { endCall(await reason(r)); return; }
  call.id = (await r.json()).call_id;
}

async function answerCall(accept) {
  if (!call || !call.incoming || call.state !== 'ringing') return;
  const r = await presenceAPI(presence, `/calls/${call.id}/answer`, { method: 'POST', body: JSON.stringify({ accept }) });
  if (!r.ok) { log('answer failed:', await reason(r)); return; }
  if (!accept) { callLog.push(['rejected', '']); endCall('you rejected the call'); }
}

async function hangUp() {
  if (!call) return;
  const c = call;
  if (c.id !== null && presence) await presenceAPI(presence, `/calls/${c.id}`, { method: 'DELETE' }).catch(() => {});
  callLog.push(['hung_up', 'you']);
  endCall('you hung up');
}

async function callStatus(e) {
  if (!call || (call.id !== null && e.call.id !== call.id)) return;
  if (call.id === null) call.id = e.call.id;  // a status can come before the answer to our POST
  callLog.push([e.call.state, e.call.reason || '']);
  switch (e.call.state) {
    case 'ringing': showCall(`ringing ${call.peer}…`); break;
    case 'answered': {
      call.state = 'answered';
      showCall(`in a call with ${call.peer} (not end-to-end encrypted: the relay forwards it)`);
      const c = call;
      try {
        c.link = await connect(e.room, e.call.token, { slots: 1, onState: state => log('call connection', state) });
        c.token = e.call.token;
        if (call !== c) { await disconnect(c.link, c.token); return; }  // ended while connecting
        c.answeredAt = performance.now();
        if (params.get('hangup')) setTimeout(() => { if (call === c) hangUp(); }, Number(params.get('hangup')) * 1000);
        if (params.get('callreport')) callReport(c, Number(params.get('callreport')));
      } catch (err) { log('cannot join the call:', err.message); hangUp(); }
      break;
    }
    default: endCall(e.call.reason || e.call.state.replace('_', ' '));
  }
}

function endCall(why) {
  if (!call) return;
  const c = call;
  call = null;
  if (c.link) disconnect(c.link, c.token);
  log('call ended:', why);
  $('call-status').textContent = presence ? `call ended: ${why}` : 'not reachable';
  $('answer').disabled = true; $('reject').disabled = true; $('hangup').disabled = true; $('call').disabled = !presence;
  // An answered call's report ends by itself (callReport); one that never connected reports here.
  if (params.get('callreport') && !c.link && !c.reported) { c.reported = true; finishCallReport(c, {}); }
}

function showCall(text) {
  $('call-status').textContent = text;
  const ringing = call && call.incoming && call.state === 'ringing';
  $('answer').disabled = !ringing; $('reject').disabled = !ringing;
  $('hangup').disabled = !call; $('call').disabled = !!call;
}

// Test driver: &callreport=SECONDS — the call's audio for that long, then the result (or at once when it ends).
async function callReport(c, seconds) {
  let last = {}, maxLevel = 0;
  for (let i = 0; i < seconds * 4 && call === c; i++) {
    await new Promise(r => setTimeout(r, 250));
    if (call !== c) break;
    last = await stats(c.link.pc);
    maxLevel = Math.max(maxLevel, last.audioLevel);
  }
  c.reported = true;
  finishCallReport(c, Object.assign({ maxAudioLevel: maxLevel, state: c.link.pc.connectionState }, last));
}

function finishCallReport(c, figures) {
  log('RESULT', Object.assign({ peer: c.peer, calls: callLog, texts: textsReceived, images: imagesShown }, figures));
  if (call === c) hangUp();
  setTimeout(() => { offline('done'); window.close(); }, 500);
}

async function stats(peer = pc) {
  const report = await peer.getStats();
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

// Test driver (&image=1): a 2×2 PNG drawn on a canvas, as a file the picker would give.
async function testImage() {
  const canvas = new OffscreenCanvas(2, 2), g = canvas.getContext('2d');
  g.fillStyle = '#c22';
  g.fillRect(0, 0, 2, 2);
  return new File([await canvas.convertToBlob({ type: 'image/png' })], 'test.png', { type: 'image/png' });
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
    if (i === 8 && params.get('say')) {
      $('text').value = params.get('say');
      await sendText(params.get('image') === '1' ? await testImage() : undefined);
    }
  }
  log('RESULT', Object.assign({ maxAudioLevel: maxLevel, firstPacketMs: firstAudioMs, state: pc ? pc.connectionState : 'closed',
    members: [...members.keys()], texts: textsReceived, images: imagesShown, trackLevels }, last));
  await leave();
  window.close();
}

$('join').onclick = join;
$('leave').onclick = leave;
$('mute').onclick = toggleMute;
$('send').onclick = () => sendText();
$('text').onkeydown = e => { if (e.key === 'Enter') sendText(); };
$('online').onclick = goOnline;
$('offline').onclick = () => offline('you went offline');
$('call').onclick = () => placeCall();
$('callee').onkeydown = e => { if (e.key === 'Enter') placeCall(); };
$('answer').onclick = () => answerCall(true);
$('reject').onclick = () => answerCall(false);
$('hangup').onclick = hangUp;
window.addEventListener('pagehide', () => {
  // Tell the relay at once (keepalive lets the requests outlive the page); a closed stream alone is noticed later.
  if (presence && presence.stream) {
    if (call && call.id !== null) presenceAPI(presence, `/calls/${call.id}`, { method: 'DELETE', keepalive: true }).catch(() => {});
    presenceAPI(presence, '', { method: 'DELETE', keepalive: true }).catch(() => {});
  }
});
if (params.get('room')) $('room').value = params.get('room');
if (params.get('token')) $('token').value = params.get('token');
if (params.get('identity')) $('identity').value = params.get('identity');
if (params.get('join') === '1') {
  join().then(() => { if (params.get('report')) report(Number(params.get('report'))); });
}
if (params.get('online') === '1') goOnline();
