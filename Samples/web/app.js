// Parley's sample web client: joins a room as a WebRTC member through the relay's combined endpoint
// (POST /v1/rooms/{room}/webrtc with the SDP offer and a member token; DELETE the Location to leave), follows the
// room through its event stream (GET /v1/rooms/{room}/events: members, speakers, texts), lists who is there
// (GET …/members) and sends texts (POST …/messages). Without a token it asks the relay for one
// (POST /v1/dev-token), which only a relay running with the public dev credentials answers.
// Before each PeerConnection the page asks for the relay's STUN and TURN servers (GET /v1/ice-servers) and hands
// them to the browser: a page behind a NAT that blocks UDP to the relay still connects through TURN.
// Images: a text's `attachments` are fetched with the page's token (GET /v1/attachments/{id}) and shown inline from a
// blob; the file picker beside the text box uploads an image (POST /v1/attachments) and sends its id in a room text.
// Calls are in calls.js; the relay's refusals as sentences, and times, in sentences.js (classic scripts, one scope).
//
// What a person reads is sentences: the status line (announced, aria-live) says what the page is doing, why a join
// failed (the relay's error JSON turned into words) and why the page left a room. The relay ends a member it removed
// (a kick, the room closing, a newer session of the same identity) in two ways, and the page reacts to the first:
// its room event stream says `member_left` for the member's own identity (why in `detail`) or `room_closed`, and
// the relay sends the browser a DTLS close_notify, which closes the PeerConnection's DTLS transport at once. Either
// tears the session down (PeerConnection closed, microphone stopped, Join enabled again); the event stream stays
// open a moment longer so that its reason can replace the close_notify's bare "the relay ended your session".
//
// Plain JavaScript, no build step. URL parameters fill the form: ?room=R&token=T&join=1 joins at once;
// &say=TEXT sends a text once connected (&image=1: with a 2×2 PNG drawn on a canvas, as if picked); &listen=1 joins
// without a microphone, through WHEP (POST …/whep: listen only); &relay=1 connects only through the relay's TURN
// servers (iceTransportPolicy "relay"); &raw=1 turns the browser's voice processing off; &report=SECONDS logs
// getStats once a second and then "PARLEY RESULT {...}" to the console and closes the page (how the tests drive it);
// &record=1 with it records what the page hears and logs it before the result (recorder.js); &observe=1 logs
// "PARLEY STATE {...}" (`parleyState()`: the status line, the buttons, the open PeerConnections and live microphone
// tracks, whether a room event stream is open, whether raw JSON is shown) whenever it changes. For calls: &online=1 is reachable at once; &call=NAME calls NAME once online;
// &answer=1 / &reject=1 answer or reject the first call that rings; &hangup=SECONDS hangs up that long into a call;
// &callreport=SECONDS logs "PARLEY RESULT {...}" when the call ended or that long after it was answered.
'use strict';
const $ = id => document.getElementById(id);
const params = new URLSearchParams(location.search);
// The room session: {room, token, identity, link, events (AbortController)}; null when in none.
let session = null;
let pc = null, micTrack = null, statsTimer = null, joinStartedAt = 0, joining = false;
// The session that ended last, while its event stream may still say why: {session, settled (room_closed said it)}.
let ending = null;
const members = new Map();  // identity → {name, muted, speaking}
const names = new Map();    // identity → display name, kept after they leave: texts name their senders alike
const textsReceived = [];   // [from, text], for the test driver
const imagesShown = [];     // [from, id, bytes]: images fetched and shown, for the test driver
const textsShown = { room: null, keys: new Set() };  // the room whose texts the panel shows, and those it shows
const links = new Set();    // every PeerConnection the page made and has not closed (rooms and calls), for parleyState
const attachmentID = /^[A-Za-z0-9_-]{22}$/;  // what the relay hands out (and the only thing put in a URL here)
let audience = 0;           // an audience room's listeners (counted, not listed)
let roomStreams = 0;        // room event streams open (a session's, and an ended one's for `reasonGraceMs`)
// How long a room's event stream stays open after its session ended: its reason may come after the close_notify.
const reasonGraceMs = 3000;

// A sentence for the activity log (and, with PARLEY, the console, where the tests read it). Figures for the tests
// (`debug`) go to the console only: nothing a person reads is JSON.
function log(sentence) {
  console.log('PARLEY ' + sentence);
  const line = document.createElement('div');
  line.textContent = `${clock(Date.now())} ${sentence}`;
  $('log').append(line);
  $('log').scrollTop = 1e9;
}
function debug(label, value) { console.log(`PARLEY ${label} ${JSON.stringify(value)}`); }

// The status line: one sentence, announced to screen readers (aria-live); `tone` colours it ('ok', 'bad').
function status(text, tone = '') {
  $('status').textContent = text;
  $('status').className = tone;
}

async function devToken(room, identity) {
  const r = await fetch('/v1/dev-token', { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ room, identity }) });
  if (r.status === 201) return (await r.json()).token;
  const refusal = await Refusal.from(r);
  if (refusal.code === 'invalid_field') throw refusal;  // a name the relay does not take: it says why
  // Only a relay with the public dev credentials gives tokens away (elsewhere this is an admin route: 401, or 404).
  throw new Error(`This relay gives out no tokens by itself: paste a member token from ${tokenCommand(room)}.`);
}

function api(s, path, options = {}) {
  options.headers = Object.assign({ 'Authorization': 'Bearer ' + s.token }, options.headers || {});
  return fetch(`/v1/rooms/${encodeURIComponent(s.room)}${path}`, options);
}

// ---- A WebRTC member ----

// One WebRTC member: a PeerConnection whose offer goes to POST /v1/rooms/{room}/webrtc. Sends the microphone
// (unless `listen`) and receives the room on up to `slots` tracks, each played by an audio element of its own.
// `onState`: the PeerConnection's state; `onEnded`: its DTLS transport closed or failed (the relay's close_notify).
// Returns {pc, url, micTrack, audios}; throws a `Refusal` (or the browser's error) when it cannot.
async function connect(room, token, { listen = false, slots = 3, onState = () => {}, onEnded = () => {} } = {}) {
  // &relay=1: only through the relay's TURN servers (iceTransportPolicy "relay"), as a page behind a strict NAT would.
  const configuration = { iceServers: await iceServers(token) };
  if (params.get('relay') === '1') configuration.iceTransportPolicy = 'relay';
  const link = { pc: new RTCPeerConnection(configuration), url: null, micTrack: null, audios: [] };
  const pc = link.pc;
  links.add(link);
  try {
    pc.onconnectionstatechange = () => onState(pc.connectionState);
    // One track per forwarding slot (a forward room sends the loudest speakers, each on a track of its own while it
    // is forwarded; a mix room one track, the mix): each plays through an audio element of its own.
    pc.ontrack = e => {
      const audio = new Audio();
      audio.srcObject = new MediaStream([e.track]);
      audio.play().catch(err => log(`The browser cannot play the room's sound: ${err.message}`));
      document.body.appendChild(audio);
      link.audios.push(audio);
      // &record=1: what the page hears, recorded for the test driver (recorder.js). The audio element stays: Chromium
      // renders a remote track (its jitter buffer runs) for an element that plays it.
      if (params.get('record') === '1') recorder.add(e.track).catch(err => log(`Cannot record: ${err.message}`));
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
    // A listener offers to WHEP (listen only: the relay takes nothing from it whatever its token grants); a member
    // that speaks to the combined endpoint.
    const endpoint = listen ? 'whep' : 'webrtc';
    const response = await fetch(`/v1/rooms/${encodeURIComponent(room)}/${endpoint}`, {
      method: 'POST', headers: { 'Content-Type': 'application/sdp', 'Authorization': 'Bearer ' + token }, body: pc.localDescription.sdp,
    });
    if (response.status !== 201) throw await Refusal.from(response);
    link.url = new URL(response.headers.get('Location'), location.href).href;
    await pc.setRemoteDescription({ type: 'answer', sdp: await response.text() });
    // BUNDLE: one DTLS transport for every section. The relay's close_notify closes it ("closed"; an alert: "failed").
    const transport = pc.getTransceivers()[0].sender.transport;
    if (transport) transport.onstatechange = () => { if (transport.state === 'closed' || transport.state === 'failed') onEnded(transport.state); };
    return link;
  } catch (e) {
    await disconnect(link, token);
    throw e;
  }
}

// An ICE restart (RFC 9725 §4.3): new ICE credentials go to the session's Location in a PATCH
// (application/trickle-ice-sdpfrag); the relay answers with its own new ones, which replace the old in its answer.
// DTLS, the keys and the member stay; the browser's checks from wherever it is now find the relay again.
async function restartIce(link, token) {
  if (!link.url || link.restarting) return;
  link.restarting = true;
  try {
    const pc = link.pc;
    pc.restartIce();
    await pc.setLocalDescription(await pc.createOffer({ iceRestart: true }));
    const sdp = pc.localDescription.sdp;
    const ufrag = /a=ice-ufrag:(\S+)/.exec(sdp)[1], pwd = /a=ice-pwd:(\S+)/.exec(sdp)[1];
    const mid = pc.getTransceivers()[0].mid || '0';
    const r = await fetch(link.url, {
      method: 'PATCH', headers: { 'Content-Type': 'application/trickle-ice-sdpfrag', 'Authorization': 'Bearer ' + token },
      body: `a=ice-ufrag:${ufrag}\r\na=ice-pwd:${pwd}\r\nm=audio 9 UDP/TLS/RTP/SAVPF 0\r\na=mid:${mid}\r\n`,
    });
    if (r.status !== 200) { log(`The relay refused to restart the connection (${r.status}).`); return; }
    const fragment = await r.text();
    const relayUfrag = /a=ice-ufrag:(\S+)/.exec(fragment)[1], relayPwd = /a=ice-pwd:(\S+)/.exec(fragment)[1];
    const answer = pc.remoteDescription.sdp.replace(/a=ice-ufrag:\S+/g, `a=ice-ufrag:${relayUfrag}`)
      .replace(/a=ice-pwd:\S+/g, `a=ice-pwd:${relayPwd}`);
    await pc.setRemoteDescription({ type: 'answer', sdp: answer });
    debug('iceRestart', relayUfrag);
    log('Restarted the connection to the relay.');
  } catch (e) {
    log(`Could not restart the connection: ${e.message}`);
  } finally {
    link.restarting = false;
  }
}

// The STUN and TURN servers the relay names for this token (GET /v1/ice-servers: RTCIceServer entries, TURN ones
// with a username and credential for the token's identity that last an hour or so). None when the relay names none
// or cannot be asked: the page then offers its host candidates alone, which is all a relay on an open address needs.
// (The same servers come as Link headers on the offer's answer, too late for a PeerConnection that has gathered.)
async function iceServers(token) {
  try {
    const r = await fetch('/v1/ice-servers', { headers: { 'Authorization': 'Bearer ' + token } });
    if (r.status !== 200) return [];
    const list = (await r.json()).ice_servers;
    if (!Array.isArray(list)) return [];
    debug('iceServers', list.map(s => s.urls));
    return list;
  } catch (e) {
    return [];
  }
}

// Ends a member: closes the PeerConnection, stops the microphone and the audio elements at once; then, unless
// `tell` is false (the relay removed it already: a DELETE could end a newer session of the same identity), DELETEs
// its Location so that the relay drops it at once.
async function disconnect(link, token, { tell = true } = {}) {
  if (!link) return;
  const url = link.url;
  link.url = null;
  if (link.micTrack) link.micTrack.stop();
  link.pc.close();
  links.delete(link);
  for (const a of link.audios) { a.srcObject = null; a.remove(); }
  if (tell && url) await fetch(url, { method: 'DELETE', headers: { 'Authorization': 'Bearer ' + token } }).catch(() => {});
}

// The member's identity: the last segment of its Location (/v1/rooms/{room}/webrtc/{identity}).
function identityOf(url) { return decodeURIComponent(new URL(url).pathname.split('/').pop()); }

// ---- Joining and leaving a room ----

async function join() {
  if (session || joining) return;
  const room = $('room').value.trim();
  let token = $('token').value.trim();
  if (!room) { status('Type the name of a room to join.', 'bad'); $('room').focus(); return; }
  joining = true;
  ending = null;
  controls('joining');
  status(`Joining ${room}…`);
  joinStartedAt = performance.now();
  try {
    if (!token) token = await devToken(room, identity());
    const s = { room, token, identity: '', link: null, events: new AbortController() };
    // The texts panel keeps a room's texts across a rejoin (its history then adds only what is new); another room
    // starts it afresh.
    if (room !== textsShown.room) { $('texts').textContent = ''; textsShown.room = room; textsShown.keys.clear(); }
    s.link = await connect(room, token, { listen: params.get('listen') === '1',
      onState: state => connectionChanged(s, state), onEnded: state => transportEnded(s, state) });
    s.identity = identityOf(s.link.url);
    // &restart=S: an ICE restart S seconds after joining (tests; a network change does the same by itself).
    const restartAfter = Number(params.get('restart'));
    if (restartAfter > 0) setTimeout(() => { if (session === s) restartIce(s.link, token); }, restartAfter * 1000);
    session = s; pc = s.link.pc; micTrack = s.link.micTrack;
    controls('joined');
    status(`Connecting to ${room}…`);
    log(`Joined ${room} as ${s.identity}; connecting the audio.`);
    followRoom(s);
    statsTimer = setInterval(showStats, 250);
  } catch (e) {
    const why = explain(e, room);
    log(`Could not join ${room}. ${why}`);
    status(`Could not join ${room}. ${why}`, 'bad');
    controls('idle');
  } finally {
    joining = false;
  }
}

// The buttons and fields for where the page is: 'idle' (Join), 'joining' (nothing), 'joined' (Leave, Mute, texts).
function controls(where) {
  const joined = where === 'joined';
  $('join').disabled = where !== 'idle';
  $('leave').disabled = !joined;
  $('mute').disabled = !joined || !micTrack;
  for (const id of ['text', 'send', 'image']) $(id).disabled = !joined;
  for (const id of ['room', 'identity', 'token']) $(id).disabled = where === 'joining';
  if (!joined) {
    $('image').value = '';
    $('mute').textContent = 'Mute microphone'; $('mute').setAttribute('aria-pressed', 'false');
  }
}

function connectionChanged(s, state) {
  if (session !== s) return;
  switch (state) {
    case 'connected':
      showConnected(s);
      log(`The audio to ${s.room} is connected.`);
      break;
    case 'disconnected':
      status(`The connection to ${s.room} is interrupted; waiting for it to come back…`, 'bad');
      log('The audio connection is interrupted.');
      // Still interrupted 2 s later (a phone that moved from Wi-Fi to its mobile network): restart ICE, keeping the
      // session and the place in the room.
      setTimeout(() => { if (session === s && s.link.pc.connectionState === 'disconnected') restartIce(s.link, s.token); }, 2000);
      break;
    case 'failed':
      end(s, 'The connection to the relay was lost (no network path, or the relay stopped). Press Join to join again.', { tell: true });
      break;
  }
}

function showConnected(s) { status(`Connected to ${s.room} as ${displayName(s.identity)}.`, 'ok'); }

// The DTLS transport closed: the relay sent close_notify, so it removed this member. The event stream may still say why.
function transportEnded(s, state) {
  if (session !== s) return;
  end(s, state === 'failed' ? 'The relay ended the connection with an error. Press Join to join again.'
                            : 'The relay ended your session. Press Join to join again.');
}

// Why the page is out of the room, for each thing the relay says.
function removedSentence(why) {
  if (!why || why === 'left') return 'You were removed from the room. Press Join to join again.';
  return `You were removed from the room: ${why}. Press Join to join again.`;
}
function closedSentence(why) {
  return `You are out of the room because the room was closed: ${why || 'no reason given'}. Press Join to join again.`;
}

// Ends session `s` at once (the PeerConnection closed, the microphone stopped, Join enabled) with `sentence` in the
// status line. Its event stream stays open `reasonGraceMs` longer, so that the relay's reason can still replace a
// bare one (`lateEvent`). `tell`: DELETE the session at the relay (not when the relay removed it).
function end(s, sentence, { tell = false } = {}) {
  if (session !== s) return;
  session = null; pc = null; micTrack = null;
  clearInterval(statsTimer);
  disconnect(s.link, s.token, { tell });
  members.clear(); audience = 0; showRecording(null); showMembers(); showLevels(null);
  controls('idle');
  status(sentence, 'bad');
  log(sentence);
  ending = { session: s, settled: false };
  setTimeout(() => s.events.abort(), reasonGraceMs);
}

// An event of session `s`'s stream after it ended: the relay's own reason for the end replaces the bare one.
function lateEvent(s, e) {
  if (!ending || ending.session !== s || session || joining || ending.settled) return;
  if (e.type === 'member_left' && e.identity === s.identity) {
    status(removedSentence(e.detail), 'bad');
    log(`Why: ${e.detail || 'no reason given'}.`);
  } else if (e.type === 'room_closed' && e.room === s.room) {
    ending.settled = true;
    status(closedSentence(e.detail), 'bad');
    log(`The room ${s.room} was closed: ${e.detail || 'no reason given'}.`);
  }
}

async function leave() {
  const s = session;
  if (!s) return;
  session = null; pc = null; micTrack = null; ending = null;
  clearInterval(statsTimer);
  s.events.abort();
  members.clear(); audience = 0; showRecording(null); showMembers(); showLevels(null);
  controls('idle');
  status(`You left ${s.room}.`);
  log(`You left ${s.room}.`);
  await disconnect(s.link, s.token);
}

function toggleMute() {
  if (!micTrack) return;
  micTrack.enabled = !micTrack.enabled;
  $('mute').textContent = micTrack.enabled ? 'Mute microphone' : 'Unmute microphone';
  $('mute').setAttribute('aria-pressed', String(!micTrack.enabled));
  log(micTrack.enabled ? 'Your microphone is on.' : 'Your microphone is muted.');
}

function identity() {
  if (!$('identity').value.trim()) $('identity').value = 'web-' + Math.random().toString(36).slice(2, 7);
  return $('identity').value.trim();
}

// ---- Following the room ----

// The room: its event stream opened first (so that nothing after the list below is missed), then its member list
// and its last texts, then the events as they come (fetch, so the token goes in a header; EventSource cannot).
async function followRoom(s) {
  let stream;
  try {
    stream = await api(s, '/events', { signal: s.events.signal });
    if (!stream.ok) throw await Refusal.from(stream);
  } catch (e) {
    if (e.name !== 'AbortError' && session === s) log(`The room's events cannot be followed: ${explain(e, s.room)}`);
    return;
  }
  try {
    const r = await api(s, '/members');
    if (r.ok && session === s) {
      const list = await r.json();
      members.clear();
      // An audience room's listeners are counted, not listed (the `audience` events keep the count).
      for (const m of list.members || []) {
        remember(m.identity, m.name);
        if (!m.audience) members.set(m.identity, { name: m.name, muted: m.muted, speaking: m.speaking });
      }
      audience = (list.members || []).filter(m => m.audience).length;
      showRecording(list.recording);
      showMembers();
      if (pc && pc.connectionState === 'connected') showConnected(s);  // with the name now known
    }
  } catch (_) { /* the list comes with the events too */ }
  try {
    // The room's last texts (kept by a relay with a state directory; none otherwise), oldest first.
    const history = await api(s, '/messages?limit=20');
    if (history.ok && session === s) {
      for (const m of ((await history.json()).messages || []).reverse()) {
        remember(m.identity, m.name);
        showText(s, m.identity, m.text, m.attachments, s.token, m.at);
      }
    }
  } catch (_) { /* no history: nothing to show */ }
  roomStreams++;
  try {
    await readEvents(stream, e => session === s ? roomEvent(s, e) : lateEvent(s, e));
    if (session === s) log('The room\'s event stream ended.');
  } catch (e) {
    if (e.name !== 'AbortError' && session === s) log(`The room's events stopped: ${explain(e, s.room)}`);
  } finally {
    roomStreams--;
  }
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

function roomEvent(s, e) {
  switch (e.type) {
    case 'member_joined':
      remember(e.identity, e.detail);
      members.set(e.identity, { name: e.detail || e.identity, muted: false, speaking: false });
      if (e.identity !== s.identity) log(`${displayName(e.identity)} joined.`);
      break;
    case 'member_left':
      // This member's own identity: the relay removed it (a kick, the room closing, a newer session elsewhere).
      if (e.identity === s.identity) { end(s, removedSentence(e.detail)); return; }
      members.delete(e.identity);
      log(`${displayName(e.identity)} left` + (e.detail && e.detail !== 'left' ? ` (${e.detail}).` : '.'));
      break;
    case 'member_muted': case 'member_unmuted': {
      const m = members.get(e.identity);
      if (m) m.muted = e.type === 'member_muted';
      if (e.identity === s.identity) log(m && m.muted ? 'The room muted you.' : 'The room unmuted you.');
      break;
    }
    case 'speakers': {
      const speaking = new Set((e.detail || '').split(',').filter(Boolean));
      for (const [id, m] of members) m.speaking = speaking.has(id);
      break;
    }
    case 'text': showText(s, e.identity, e.detail || '', e.attachments, s.token, e.at); break;
    case 'room_closed': end(s, closedSentence(e.detail)); if (ending) ending.settled = true; return;
    case 'stream_closed': log(`The room's events ended: ${e.detail || 'no reason given'}.`); break;
    case 'audience': audience = Number(e.detail) || 0; break;
    case 'recording_started': showRecording(e.detail); log('This room is being recorded.'); break;
    case 'recording_stopped': showRecording(null); log('The recording of this room stopped.'); break;
  }
  showMembers();
}

// Names: a member's display name wherever the page names it (list, texts, log), its identity when it has none.
function remember(id, name) { if (id && name) names.set(id, name); }
function displayName(id) { return (members.get(id) || {}).name || names.get(id) || id; }

// Whether the room is being recorded (the relay tells every member; the page shows it while it lasts).
function showRecording(id) {
  $('recording').textContent = id ? '● This room is being recorded' : '';
  $('recording').title = id ? `recording ${id}` : '';
}

// The member list: each name (with its identity when that differs), "(you)" beside this page's own, and the words
// "speaking" and "muted" (not only a colour).
function showMembers() {
  const ul = $('members');
  ul.textContent = '';
  $('audience').textContent = audience > 0 ? `and ${audience} listening` : '';
  $('nobody').hidden = members.size > 0;
  const me = session && session.identity;
  for (const [id, m] of members) {
    const li = document.createElement('li'), who = document.createElement('span');
    who.className = 'who';
    who.textContent = displayName(id);
    li.append(who);
    if (id === me) li.append(span('you', '(you)'));
    if (displayName(id) !== id) li.append(span('ident', id));
    if (m.speaking) { li.classList.add('speaking'); li.append(span('tag speaking', 'speaking')); }
    if (m.muted) { li.classList.add('muted'); li.append(span('tag muted', 'muted')); }
    ul.appendChild(li);
  }
}
function span(className, text) {
  const el = document.createElement('span');
  el.className = className;
  el.textContent = text;
  return el;
}

// A text as the page shows it: its time, the sender's display name in bold, the text as a text node, then its images
// (fetched with `token`). `s`: the room session it came in (a text seen twice — in the history and as an event, or
// in the history of a rejoin — shows once); `direct`: a direct text to this page's presence.
function showText(s, from, text, attachments = [], token = null, at = Date.now(), { direct = false } = {}) {
  if (s) {
    const key = `${at}\n${from}\n${text}`;
    if (textsShown.keys.has(key)) return;
    textsShown.keys.add(key);
  }
  textsReceived.push([direct ? `${from} (direct)` : from, text]);
  const div = document.createElement('div'), when = document.createElement('time'), who = document.createElement('b');
  div.className = 'msg';
  when.dateTime = new Date(at).toISOString();
  when.textContent = clock(at);
  who.className = 'who';
  const me = (session && session.identity) || (presence && presence.identity);
  who.textContent = displayName(from) + (from === me ? ' (you)' : '') + (direct ? ' (direct)' : '');
  div.append(when, who, document.createTextNode(text));  // text nodes: a text is never markup
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
    if (!r.ok) throw await Refusal.from(r);
    const blob = await r.blob();
    if (!/^image\/(png|jpeg|webp|gif)$/.test(blob.type)) throw new Error(`not an image (${blob.type || 'no type'})`);
    const img = document.createElement('img'), url = URL.createObjectURL(blob);
    img.alt = `image from ${displayName(from)}`;
    img.onload = img.onerror = () => URL.revokeObjectURL(url);
    img.src = url;
    div.append(img);
    imagesShown.push([from, id, blob.size]);
    $('texts').scrollTop = 1e9;
  } catch (e) {
    const why = explain(e).replace(/\.$/, '');
    log(`An image from ${displayName(from)} cannot be shown: ${lowerFirst(why)}.`);
    note(`[image not shown: ${lowerFirst(why)}]`);
  }
}

// Sends the text box's text and the picked image (uploaded first: POST /v1/attachments answers its id).
async function sendText(file = $('image').files[0]) {
  const text = $('text').value, s = session;
  if ((!text && !file) || !s) return;
  const failed = why => { $('chat-note').textContent = why; log(why); };
  $('chat-note').textContent = '';
  try {
    const body = { text };
    if (file) {
      const up = await fetch('/v1/attachments', { method: 'POST', body: file,
        headers: { 'Authorization': 'Bearer ' + s.token, 'Content-Type': file.type || 'application/octet-stream' } });
      if (up.status !== 201) { failed(`The image was not sent. ${explain(await Refusal.from(up), s.room)}`); return; }
      body.attachments = [(await up.json()).id];
    }
    const r = await api(s, '/messages', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    if (r.ok) { $('text').value = ''; $('image').value = ''; } else { failed(`The text was not sent. ${explain(await Refusal.from(r), s.room)}`); }
  } catch (e) {
    failed(`The text was not sent. ${explain(e, s.room)}`);
  }
}

// ---- Levels ----

async function stats(peer = pc) {
  const report = await peer.getStats();
  const all = [...report.values()];
  const inbounds = all.filter(s => s.type === 'inbound-rtp' && s.kind === 'audio');
  // The busiest track stands for "the room" in the single figures; every track is listed in `tracks`.
  const inbound = inbounds.reduce((a, b) => ((b.packetsReceived || 0) > (a.packetsReceived || 0) ? b : a), {});
  const outbound = all.find(s => s.type === 'outbound-rtp' && s.kind === 'audio') || {};
  const source = all.find(s => s.type === 'media-source' && s.kind === 'audio') || {};
  const transport = all.find(s => s.type === 'transport') || {};
  // The candidate pair in use, and this side's candidate of it: "host", or "relay" through a TURN server.
  const pair = report.get(transport.selectedCandidatePairId) || {};
  const local = report.get(pair.localCandidateId) || {};
  return {
    packetsReceived: inbound.packetsReceived || 0, packetsLost: inbound.packetsLost || 0, jitter: inbound.jitter,
    audioLevel: inbound.audioLevel || 0, totalAudioEnergy: inbound.totalAudioEnergy || 0,
    concealedSamples: inbound.concealedSamples || 0, totalSamplesReceived: inbound.totalSamplesReceived || 0,
    // The browser's jitter buffer (NetEq): its mean delay over every sample it played, in ms, and what it did.
    meanJitterBufferMs: inbound.jitterBufferEmittedCount
      ? 1000 * inbound.jitterBufferDelay / inbound.jitterBufferEmittedCount : null,
    jitterBufferTargetMs: inbound.jitterBufferEmittedCount
      ? 1000 * inbound.jitterBufferTargetDelay / inbound.jitterBufferEmittedCount : null,
    concealmentEvents: inbound.concealmentEvents || 0, silentConcealedSamples: inbound.silentConcealedSamples || 0,
    insertedSamplesForDeceleration: inbound.insertedSamplesForDeceleration || 0,
    removedSamplesForAcceleration: inbound.removedSamplesForAcceleration || 0,
    fecPacketsReceived: inbound.fecPacketsReceived || 0, packetsDiscarded: inbound.packetsDiscarded || 0,
    nackCount: inbound.nackCount || 0,
    packetsSent: outbound.packetsSent || 0, micLevel: source.audioLevel || 0,
    dtlsState: transport.dtlsState, srtpCipher: transport.srtpCipher, tlsVersion: transport.tlsVersion,
    localCandidateType: local.candidateType, relayProtocol: local.relayProtocol,
    tracks: inbounds.map(s => ({ ssrc: s.ssrc, packetsReceived: s.packetsReceived || 0, packetsLost: s.packetsLost || 0,
                                 audioLevel: s.audioLevel || 0 })),
  };
}

async function showStats() {
  if (!pc) return;
  const s = await stats();
  if (pc) showLevels(s);
}

// The two meters, in dB below full scale: −60 dB (silence) at the left end, 0 dB at the right. The room's level is
// its loudest track's (each forwarded speaker has a track of its own).
function showLevels(s) {
  const room = s ? Math.max(0, ...s.tracks.map(t => t.audioLevel)) : null;
  showLevel('out', s && micTrack ? (micTrack.enabled ? s.micLevel : 0) : null);
  showLevel('in', room);
}
function showLevel(which, level) {
  const dB = level ? Math.max(-60, Math.min(0, 20 * Math.log10(level))) : -60;
  $(`${which}-level`).style.width = `${(dB + 60) / 60 * 100}%`;
  const words = level === null ? 'off' : dB <= -50 ? 'silent' : `${Math.round(dB)} dB`.replace('-', '−');
  $(`${which}-reading`).textContent = level === null ? '–' : words;
  $(`${which}-meter`).setAttribute('aria-valuenow', String(Math.round(dB)));
  $(`${which}-meter`).setAttribute('aria-valuetext', words);
}

// ---- Test drivers ----

// The page's state as a test reads it: the status line, the buttons, the PeerConnections it has open, the
// microphone tracks still live, whether a room event stream is open, and whether the page shows raw JSON anywhere.
function parleyState() {
  const open = [...links].filter(l => l.pc.signalingState !== 'closed');
  return {
    status: $('status').textContent,
    joinEnabled: !$('join').disabled, leaveEnabled: !$('leave').disabled, muteEnabled: !$('mute').disabled,
    sendEnabled: !$('send').disabled,
    openPeerConnections: open.length,
    liveMicrophones: [...links].filter(l => l.micTrack && l.micTrack.readyState === 'live').length,
    inRoom: !!session, members: [...members.keys()], eventStreamOpen: roomStreams > 0,
    rawJSONShown: /[{\[]\s*"/.test(document.body.textContent),
  };
}
window.parleyState = parleyState;

// &observe=1: "PARLEY STATE {...}" each time `parleyState()` changes (checked every 50 ms).
function observe() {
  let last = '';
  setInterval(() => {
    const now = JSON.stringify(parleyState());
    if (now !== last) { last = now; console.log('PARLEY STATE ' + now); }
  }, 50);
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
    if (i % 4 === 3) debug('stats', last);
    if (i === 8 && params.get('say')) {
      $('text').value = params.get('say');
      await sendText(params.get('image') === '1' ? await testImage() : undefined);
    }
  }
  // &record=1: the recording's PCM lines first, then the result with its clock (recorder.js).
  const sync = params.get('sync') ? await recorder.syncClock(Number(params.get('sync'))) : undefined;
  const recording = params.get('record') === '1' ? Object.assign(recorder.finish(), { sync }) : undefined;
  debug('RESULT', Object.assign({ maxAudioLevel: maxLevel, firstPacketMs: firstAudioMs, state: pc ? pc.connectionState : 'closed',
    members: [...members.keys()], texts: textsReceived, images: imagesShown, trackLevels, recording }, last));
  await leave();
  window.close();
}

$('join').onclick = join;
$('leave').onclick = leave;
$('mute').onclick = toggleMute;
$('send').onclick = () => sendText();
$('text').onkeydown = e => { if (e.key === 'Enter') sendText(); };
$('room').onkeydown = $('identity').onkeydown = $('token').onkeydown = e => { if (e.key === 'Enter') join(); };
window.addEventListener('pagehide', () => {
  // Tell the relay at once (keepalive lets the request outlive the page); a closed PeerConnection alone is noticed later.
  if (session && session.link.url) {
    fetch(session.link.url, { method: 'DELETE', keepalive: true, headers: { 'Authorization': 'Bearer ' + session.token } }).catch(() => {});
  }
});
if (params.get('room')) $('room').value = params.get('room');
if (params.get('token')) $('token').value = params.get('token');
if (params.get('identity')) $('identity').value = params.get('identity');
if (params.get('observe') === '1') observe();
showMembers();
if (params.get('join') === '1') {
  join().then(() => { if (params.get('report')) report(Number(params.get('report'))); });
}
