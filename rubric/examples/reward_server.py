#!/usr/bin/env python3
"""A reward server for rubric.HTTP, standard library only: each POST carries
one rollout as JSON and gets the reward back. It stays loaded between
rollouts, so heavy imports (a verifier, a model) are paid once.

    python3 rubric/examples/reward_server.py 8765
    rubric.HTTPConfig{URL: "http://127.0.0.1:8765/reward"}
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from reward import reward  # the same function as the command example


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        try:
            rollout = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            body, status = json.dumps(reward(rollout)).encode(), 200
        except Exception as e:  # the trainer scores 0 and logs this line
            body, status = f"{type(e).__name__}: {e}".encode(), 500
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8765
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
