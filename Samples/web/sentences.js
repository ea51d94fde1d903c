// What a person reads, for the sample page (loaded before app.js): the relay's refusals as sentences — its error JSON
// ({"error": {"code", "message"}}) is never shown as it is; the codes a person meets (a bad or expired token, a full
// room, a room the token may not enter) become advice — and times as the page shows them.
'use strict';

// A refusal from the relay's API: its HTTP status and its error JSON's code and message.
class Refusal extends Error {
  constructor(httpStatus, code, message) { super(message); this.httpStatus = httpStatus; this.code = code; }
  static async from(response) {
    const text = await response.text();
    let code = '', message = '';
    try { ({ code, message } = JSON.parse(text).error); } catch (_) { message = response.statusText || `HTTP ${response.status}`; }
    return new Refusal(response.status, code || '', message || '');
  }
}

// What a bad token's code (in the relay's "bad token: token_…" message) means for the person holding it.
const tokenProblems = {
  token_expired: room => `Your token has expired: get a new one with ${tokenCommand(room)}.`,
  token_not_yet_valid: () => 'Your token is not valid yet: check this computer\'s clock, or get a new token.',
  token_malformed: room => `That is not a member token: paste the whole token that ${tokenCommand(room)} printed.`,
  token_bad_signature: room => `Your token was not made by this relay (its signature does not match): get one with ${tokenCommand(room)} on this relay.`,
  token_unknown_key: room => `Your token was signed with a key this relay does not know: get one with ${tokenCommand(room)} on this relay.`,
  token_unsupported_algorithm: room => `That is not a Parley token: get one with ${tokenCommand(room)}.`,
  token_wrong_relay: room => `Your token was made for another relay: get one with ${tokenCommand(room)} on this relay.`,
};
function tokenCommand(room) { return `parley token --identity NAME --room ${room || 'ROOM'}`; }

// A refusal or failure as a sentence a person can act on; `room` names the room in the advice.
function explain(e, room) {
  if (e instanceof Refusal) {
    const m = e.message.replace(/\.$/, '');
    switch (e.code) {
      case 'unauthorized': {
        const problem = tokenProblems[(/token_[a-z_]+/.exec(m) || [])[0]];
        if (problem) return problem(room);
        return `This relay needs a member token: paste one from ${tokenCommand(room)}.`;
      }
      case 'forbidden': case 'private_room':
        return `Your token does not let you into this room: ${lowerFirst(m)}.`;
      case 'conflict': {
        const full = /is full \((\d+) members?\)/.exec(m);
        if (full) return `The room is full (${full[1]} member${full[1] === '1' ? '' : 's'}): try again when someone leaves.`;
        return upperFirst(m) + '.';
      }
      case 'not_found':
        if (/does not exist/.test(m)) return 'The room does not exist, and your token may not open it: check its name.';
        return upperFirst(m) + '.';
      case 'too_many_streams': return 'Too many pages are open with this name: close one and try again.';
      case 'rate_limited': return 'The relay asks to slow down: wait a moment and try again.';
      case 'unavailable': return `The relay cannot take you now: ${lowerFirst(m)}.`;
      case 'body_too_large': return 'That is too large for the relay.';
      default: return m ? upperFirst(m) + '.' : `The relay refused (HTTP ${e.httpStatus}).`;
    }
  }
  switch (e && e.name) {
    case 'NotAllowedError': return 'The browser may not use the microphone: allow it for this page, and press Join again.';
    case 'NotFoundError': case 'OverconstrainedError': return 'The browser found no microphone to use.';
    case 'NotReadableError': return 'The microphone is busy or could not start.';
    case 'TypeError':  // what fetch throws when no answer came
      if (/fetch|network/i.test(e.message)) return 'The relay cannot be reached: is it running, and is this page served by it?';
  }
  return upperFirst(String(e && e.message || e));
}
function upperFirst(s) { return s.charAt(0).toUpperCase() + s.slice(1); }
function lowerFirst(s) { return /^[A-Z][a-z]/.test(s) ? s.charAt(0).toLowerCase() + s.slice(1) : s; }

// A time as the page shows it: hours and minutes today, with the date on another day.
function clock(ms) {
  const d = new Date(ms), today = new Date().toDateString() === d.toDateString();
  const time = d.toLocaleTimeString([], { hour: 'numeric', minute: '2-digit' });
  return today ? time : `${d.toLocaleDateString([], { month: 'short', day: 'numeric' })} ${time}`;
}
