// Test driver (&record=1, with &listen=1 and &report=SECONDS): records what the page hears, for the listener
// benchmark and tests to score. Every remote track goes into one AudioWorklet (their sum, channel 0) in an
// AudioContext at 48 kHz; at the end of the report the page logs the recording as 16-bit PCM, 1,024 samples a line:
//
//   PARLEY PCM {"index": k, "count": n} BASE64   (little-endian Int16, 48 kHz mono; lines k = 0 … n − 1)
//
// and its clock: `earMs`, when the recording's first frame comes out of the page's audio output, in ms of the Unix
// epoch (performance.timeOrigin + getOutputTimestamp's performanceTime, extrapolated to that frame), so that a
// script can set it beside the speaker's capture time on the machine's clock (`clock`: the same by each second's
// output timestamp; `sync`, with &sync=PORT: the page's clock against the script's, see `syncClock`);
// `renderToOutputMs`, how much of that is the context's own output latency (a frame is recorded when it is rendered,
// that long before it comes out). Classic script, one scope with app.js.
'use strict';

// The worklet: copies its input's first channel into blocks of one second and posts each full one, with the context
// frame the recording started at. From its start the recording's sample k is the context's frame firstFrame + k: a
// render quantum without input (no source processing) is recorded as silence, and so are frames the context rendered
// without calling the worklet (a render thread that fell behind skips quanta), which it also posts as `skipped`
// (where, in frames of the recording, and how many). It returns true: it keeps running while the page records.
const recorderWorklet = `
class ParleyRecorder extends AudioWorkletProcessor {
  constructor() { super(); this.block = new Float32Array(sampleRate); this.filled = 0; this.next = null; }
  push(value) {
    this.block[this.filled++] = value;
    if (this.filled < this.block.length) return;
    this.port.postMessage({ block: this.block, frame: this.next });
    this.block = new Float32Array(sampleRate);
    this.filled = 0;
  }
  process(inputs) {
    const channel = inputs[0] && inputs[0][0];
    if (this.next === null) {
      if (!channel) return true;
      this.first = this.next = currentFrame;
      this.port.postMessage({ firstFrame: currentFrame });
    }
    if (currentFrame > this.next) {
      this.port.postMessage({ skipped: [this.next - this.first, currentFrame - this.next] });
      while (this.next < currentFrame) { this.next++; this.push(0); }
    }
    for (let i = 0; i < 128; i++) { this.next++; this.push(channel ? channel[i] : 0); }
    return true;
  }
}
registerProcessor('parley-recorder', ParleyRecorder);
`;

// The page's recorder: `add(track)` for each remote track, `finish()` for the recording and its clock.
const recorder = {
  context: null, node: null, blocks: [], firstFrame: null, ready: null, sources: [],
  stamps: [],  // getOutputTimestamp() when the recording started and as each block arrived: the context's clock
  renderToOutput: [],  // ms from rendering to output, at each stamp
  skipped: [],  // [frame of the recording, frames] the context rendered without running the worklet

  // Starts the context and the worklet once; a track that arrives meanwhile waits for them.
  start() {
    if (this.ready) return this.ready;
    this.context = new AudioContext({ sampleRate: 48000, latencyHint: 'interactive' });
    const url = URL.createObjectURL(new Blob([recorderWorklet], { type: 'application/javascript' }));
    this.ready = this.context.audioWorklet.addModule(url).then(() => {
      this.node = new AudioWorkletNode(this.context, 'parley-recorder');
      this.node.port.onmessage = e => {
        if (e.data.firstFrame !== undefined) { this.firstFrame = e.data.firstFrame; debug('recording', e.data); }
        if (e.data.block) { this.blocks.push(e.data.block); this.endFrame = e.data.frame; }
        if (e.data.skipped) { this.skipped.push(e.data.skipped); return; }
        const t = this.context.getOutputTimestamp();
        // How long a frame the context renders now takes to come out of its output (its base and output latency).
        const behind = (this.context.currentTime - t.contextTime) * 1000;
        this.renderToOutput.push(behind - (performance.now() - t.performanceTime));
        this.stamps.push(t);
      };
      // Pulled by the destination (its output is silence): a node connected nowhere is not run.
      this.node.connect(this.context.destination);
      return this.context.resume();
    });
    return this.ready;
  },

  async add(track) {
    await this.start();
    const source = this.context.createMediaStreamSource(new MediaStream([track]));
    source.connect(this.node);
    this.sources.push(source);
  },

  // The recording's clock: when context time `seconds` comes out of the page's output, in ms of the Unix epoch, by
  // the output timestamp `t`.
  earMs(seconds, t) {
    return performance.timeOrigin + t.performanceTime + (seconds - t.contextTime) * 1000;
  },

  // &sync=PORT: the page's clock against the machine's. Five requests to http://127.0.0.1:PORT/sync?k=K (a script's
  // server notes its own clock as each arrives); each gives [K, sent, answered] in the page's clock (ms of the Unix
  // epoch, as `earMs`). A script cannot use the machine's wall clock for this where it is slewed, as it was here.
  async syncClock(port) {
    const pings = [];
    for (let k = 0; k < 5; k++) {
      const sent = performance.timeOrigin + performance.now();
      await fetch(`http://127.0.0.1:${port}/sync?k=${k}`, { mode: 'no-cors', cache: 'no-store' }).catch(() => {});
      pings.push([k, sent, performance.timeOrigin + performance.now()]);
    }
    return pings;
  },

  // Logs the recording (PARLEY PCM lines) and returns what the result reports of it.
  finish() {
    if (!this.context || this.firstFrame === null) return { recordedSeconds: 0 };
    const sampleRate = this.context.sampleRate;
    // `earMs` by the stamp taken as the recording started; `clock`, by every stamp: [where in the recording it was
    // taken (s), the first frame's ear time by it]. They agree while the context's clock keeps pace with the page's;
    // a context that stalled (its render thread starved) moves the first frame's ear time from its stall on.
    const start = this.firstFrame / sampleRate;
    const info = { recordedSeconds: this.blocks.length, sampleRate, framesSpanned: this.endFrame - this.firstFrame,
                   earMs: this.earMs(start, this.stamps[0]),
                   clock: this.stamps.map(t => [Math.round((t.contextTime - start) * 1e3) / 1e3, this.earMs(start, t)]),
                   skipped: this.skipped,
                   renderToOutputMs: this.renderToOutput.slice().sort((a, b) => a - b)[this.renderToOutput.length >> 1],
                   outputLatency: this.context.outputLatency, baseLatency: this.context.baseLatency };
    // Lines of 1,024 samples (under 3,000 characters as Chromium logs them): a write to a pipe that long is never
    // split by another process's (PIPE_BUF), where longer lines came out cut in two.
    const samples = new Int16Array(this.blocks.length * sampleRate);
    this.blocks.forEach((block, k) => {
      for (let i = 0; i < block.length; i++) {
        samples[k * sampleRate + i] = Math.round(Math.max(-1, Math.min(1, block[i])) * 32767);
      }
    });
    // The platform's byte order: little-endian wherever Chromium runs.
    const bytes = new Uint8Array(samples.buffer), perLine = 2048, count = Math.ceil(bytes.length / perLine);
    for (let index = 0; index < count; index++) {
      const line = String.fromCharCode(...bytes.subarray(index * perLine, (index + 1) * perLine));
      console.log(`PARLEY PCM ${JSON.stringify({ index, count })} ${btoa(line)}`);
    }
    for (const s of this.sources) s.disconnect();
    this.context.close();
    return info;
  },
};
