import base64, hashlib, hmac, json, os, socket, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# A webhook receiver for WebhookProcessTests: webhook_receiver.py PORT SECRET DIR. It answers each POST as the file
# DIR/mode says at that moment — ok (200), 500, garbage (bytes that are not HTTP, then a close) or slow:SECONDS (then
# 200) — and logs every request to DIR/attempts.jsonl, those answered 200 to DIR/delivered.jsonl, each with whether
# its Standard Webhooks signature verified (HMAC-SHA256 over "id.timestamp.body" with the whsec_ secret's bytes).
port, secret, folder = int(sys.argv[1]), sys.argv[2], sys.argv[3]
key = base64.b64decode(secret[len("whsec_"):])

def mode():
    try:
        return open(os.path.join(folder, "mode")).read().strip()
    except OSError:
        return "ok"

class Hook(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        wid, ts, sig = self.headers.get("webhook-id"), self.headers.get("webhook-timestamp"), self.headers.get("webhook-signature")
        expected = "v1," + base64.b64encode(hmac.new(key, f"{wid}.{ts}.".encode() + body, hashlib.sha256).digest()).decode()
        m = mode()
        record = {"id": wid, "timestamp": ts, "signature_ok": sig == expected, "mode": m, "at": time.time(),
                  "body": body.decode("utf-8", "replace")}
        with open(os.path.join(folder, "attempts.jsonl"), "a") as f:
            f.write(json.dumps(record) + "\n")
        if m == "500":
            self.send_response(500); self.end_headers(); self.wfile.write(b"no"); return
        if m == "garbage":
            self.wfile.write(b"\x00\xffTHIS IS NOT HTTP\r\n\r\n" * 100); self.close_connection = True; return
        if m.startswith("slow:"):
            time.sleep(float(m[5:]))
        self.send_response(200); self.send_header("content-length", "2"); self.end_headers(); self.wfile.write(b"ok")
        with open(os.path.join(folder, "delivered.jsonl"), "a") as f:
            f.write(json.dumps(record) + "\n")

ThreadingHTTPServer.allow_reuse_address = True
server = ThreadingHTTPServer(("127.0.0.1", port), Hook)
print("listening", flush=True)
server.serve_forever()
