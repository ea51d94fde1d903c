// The sample page's Calls panel (loaded after app.js, whose `connect`, `disconnect`, `log` and `showText` it uses).
// "Be reachable" opens the page's presence stream (GET /v1/presence/events): while it is open the page is online as
// its token's identity, a `parley call` to it rings here, and it can call anyone online. Calls go through
// /v1/presence/{stream}/calls; an answered call gives a token for a private call room, joined like a room.
'use strict';
let presence = null;        // {token, stream, identity, abort}: the page is reachable for calls
let call = null;            // {id, peer, incoming, state, link}: the call ringing or under way (one at a time)
const callLog = [];         // [state, reason], for the test driver

// The page's presence: its private event stream. Online while it is open; the first event names the stream.
async function goOnline() {
  if (presence) return;
  $('online').disabled = true;
  const room = $('room').value.trim() || 'lobby';
  try {
    let token = $('token').value.trim();
    if (!token) token = await devToken(room, identity());
    presence = { token, stream: null, identity: '', abort: new AbortController() };
    $('call-status').textContent = 'Becoming reachable…';
    const r = await fetch('/v1/presence/events', { headers: { 'Authorization': 'Bearer ' + token }, signal: presence.abort.signal });
    if (r.status !== 200) throw await Refusal.from(r);
    readEvents(r, presenceEvent).catch(e => { if (e.name !== 'AbortError') log(`The call stream ended: ${explain(e)}`); })
      .finally(() => { if (presence && presence.token === token) offline('the relay closed the stream'); });
  } catch (e) {
    const why = explain(e, room);
    log(`Cannot be reachable for calls. ${why}`);
    $('call-status').textContent = `Not reachable for calls. ${why}`;
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
  $('call-status').textContent = `Not reachable for calls (${why}).`;
  log(`You are no longer reachable for calls: ${why}.`);
}

function presenceAPI(p, path, options = {}) {
  options.headers = Object.assign({ 'Authorization': 'Bearer ' + p.token, 'Content-Type': 'application/json' }, options.headers || {});
  return fetch(`/v1/presence/${p.stream}${path}`, options);
}

function presenceEvent(e) {
  switch (e.type) {
    case 'presence_online':
      presence.stream = e.detail;
      presence.identity = e.identity;
      log(`You are reachable for calls as ${e.identity}.`);
      $('call-status').textContent = `Reachable for calls as ${e.identity}.`;
      $('offline').disabled = false; $('callee').disabled = false; $('call').disabled = false;
      if (params.get('call')) placeCall(params.get('call'));
      break;
    case 'presence_offline': offline(e.detail || 'offline'); break;
    case 'stream_closed': offline(e.detail || 'the token expired'); break;
    case 'incoming_call':
      call = { id: e.call.id, peer: e.identity, incoming: true, state: 'ringing', link: null };
      remember(e.identity, e.detail);
      callLog.push(['incoming', e.identity]);
      showCall(`${displayName(e.identity)} is calling.`);
      log(`${displayName(e.identity)} is calling.`);
      if (params.get('answer') === '1') answerCall(true);
      else if (params.get('reject') === '1') answerCall(false);
      break;
    case 'call_status': callStatus(e); break;
    case 'direct_text': showText(null, e.identity, e.detail || '', e.attachments, presence && presence.token, e.at, { direct: true }); break;
  }
}

async function placeCall(callee) {
  callee = (callee || $('callee').value).trim();
  if (!presence || !presence.stream || call || !callee) return;
  call = { id: null, peer: callee, incoming: false, state: 'calling', link: null };
  showCall(`Calling ${callee}…`);
  const r = await presenceAPI(presence, '/calls', { method: 'POST', body: JSON.stringify({ callee }) });
  if (r.status !== 202) { endCall(lowerFirst(explain(await Refusal.from(r)).replace(/\.$/, ''))); return; }
  call.id = (await r.json()).call_id;
}

async function answerCall(accept) {
  if (!call || !call.incoming || call.state !== 'ringing') return;
  const r = await presenceAPI(presence, `/calls/${call.id}/answer`, { method: 'POST', body: JSON.stringify({ accept }) });
  if (!r.ok) { log(`The call could not be answered. ${explain(await Refusal.from(r))}`); return; }
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
    case 'ringing': showCall(`Ringing ${displayName(call.peer)}…`); break;
    case 'answered': {
      call.state = 'answered';
      showCall(`In a call with ${displayName(call.peer)} (not end-to-end encrypted: the relay forwards it).`);
      log(`${displayName(call.peer)} answered.`);
      const c = call;
      try {
        c.link = await connect(e.room, e.call.token, { slots: 1, onState: state => { if (state === 'connected') log('The call\'s audio is connected.'); } });
        c.token = e.call.token;
        if (call !== c) { await disconnect(c.link, c.token); return; }  // ended while connecting
        c.answeredAt = performance.now();
        if (params.get('hangup')) setTimeout(() => { if (call === c) hangUp(); }, Number(params.get('hangup')) * 1000);
        if (params.get('callreport')) callReport(c, Number(params.get('callreport')));
      } catch (err) { log(`The call could not start. ${explain(err)}`); hangUp(); }
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
  log(`The call ended: ${why}.`);
  $('call-status').textContent = presence ? `The call ended: ${why}.` : 'Not reachable for calls.';
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
  debug('RESULT', Object.assign({ peer: c.peer, calls: callLog, texts: textsReceived, images: imagesShown }, figures));
  if (call === c) hangUp();
  setTimeout(() => { offline('done'); window.close(); }, 500);
}

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
if (params.get('online') === '1') goOnline();
