#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A fake GCE metadata server for weft's tests, answering as Google documents
(https://cloud.google.com/compute/docs/metadata/querying-metadata): requests
need "Metadata-Flavor: Google"; replies carry it and an ETag; directories list
their entries ("0/") or, with ?recursive=true, their tree as JSON (alt=text:
"path value" lines); ?wait_for_change=true[&last_etag=E][&timeout_sec=N] holds
the request until the value's ETag differs from E (or from the value at the
time of the request) or N seconds have passed.

Control endpoints for tests (no header needed):
  /control/set?path=instance/preempted&value=TRUE   set a value (wakes waiters)
  /control/delete?path=instance/maintenance-event   remove a key
  /control/fail503?n=3                               answer the next n requests 503
  /control/count                                     metadata requests seen so far

Usage: gcp-fake-metadata.py --data tree.json --port-file FILE [--host 127.0.0.1]
It binds a free port and writes it to FILE once it is listening.
"""
import argparse
import hashlib
import http.server
import json
import os
import sys
import threading
import time
import urllib.parse

PREFIX = "/computeMetadata/v1/"
MAX_WAIT = 300


class State:
    def __init__(self, tree):
        self.tree = tree
        self.cond = threading.Condition()
        self.fail503 = 0
        self.count = 0

    def find(self, path):
        node = self.tree
        for part in [p for p in path.split("/") if p]:
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def set(self, path, value):
        parts = [p for p in path.split("/") if p]
        with self.cond:
            node = self.tree
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            if value is None:
                node.pop(parts[-1], None)
            else:
                node[parts[-1]] = value
            self.cond.notify_all()


def etag_of(node):
    blob = json.dumps(node, sort_keys=True).encode()
    return hashlib.md5(blob).hexdigest()[:16]


def camel(key):
    head, *rest = key.split("-")
    return head + "".join(r[:1].upper() + r[1:] for r in rest)


def to_json(node):
    if isinstance(node, dict):
        return {camel(k): to_json(v) for k, v in node.items()}
    return node


def to_text(node, prefix=""):
    if not isinstance(node, dict):
        return ["%s %s" % (prefix, node) if prefix else str(node)]
    lines = []
    for k in sorted(node):
        lines += to_text(node[k], prefix + ("/" if prefix else "") + k)
    return lines


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # Clients hang up on held wait_for_change requests: not an error.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):
        if os.environ.get("WEFT_FAKE_MD_VERBOSE"):
            sys.stderr.write("fake-metadata: " + (fmt % args) + "\n")

    def reply(self, code, body, etag=None, ctype="application/text"):
        data = body.encode()
        self.send_response(code)
        self.send_header("Metadata-Flavor", "Google")
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        if etag:
            self.send_header("ETag", etag)
        self.end_headers()
        self.wfile.write(data)

    def control(self, url, q):
        st = self.server.state
        what = url.path[len("/control/"):]
        if what == "set":
            st.set(q["path"][0], q["value"][0])
        elif what == "delete":
            st.set(q["path"][0], None)
        elif what == "fail503":
            with st.cond:
                st.fail503 = int(q["n"][0])
        elif what == "count":
            with st.cond:
                return self.reply(200, "%d\n" % st.count)
        else:
            return self.reply(404, "no such control\n")
        return self.reply(200, "ok\n")

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        st = self.server.state
        if url.path.startswith("/control/"):
            return self.control(url, q)
        with st.cond:
            st.count += 1
            if st.fail503 > 0:
                st.fail503 -= 1
                return self.reply(503, "Service Unavailable\n")
        if self.headers.get("Metadata-Flavor") != "Google":
            return self.reply(403, "Missing Metadata-Flavor:Google header.\n")
        if "X-Forwarded-For" in self.headers:
            return self.reply(403, "X-Forwarded-For not allowed\n")
        if not url.path.startswith(PREFIX):
            return self.reply(404, "not found\n")
        path = url.path[len(PREFIX):]
        recursive = q.get("recursive", ["false"])[0].lower() == "true"
        with st.cond:
            node = st.find(path)
            if node is None:
                return self.reply(404, "not found\n")
            if q.get("wait_for_change", ["false"])[0].lower() == "true":
                if isinstance(node, dict) and not recursive:
                    return self.reply(400, "wait_for_change needs a value or recursive=true\n")
                last = q.get("last_etag", [None])[0]
                start = etag_of(node)
                timeout = min(int(q.get("timeout_sec", [str(MAX_WAIT)])[0]), MAX_WAIT)
                deadline = time.monotonic() + timeout
                if last in (None, start):
                    while True:
                        node = st.find(path)
                        left = deadline - time.monotonic()
                        if node is None or etag_of(node) != start or left <= 0:
                            break
                        st.cond.wait(left)
                    if node is None:
                        return self.reply(404, "not found\n")
            etag = etag_of(node)
            if isinstance(node, dict):
                if recursive and q.get("alt", ["json"])[0] == "text":
                    body = "\n".join(to_text(node)) + "\n"
                elif recursive:
                    return self.reply(200, json.dumps(to_json(node)), etag, "application/json")
                else:
                    body = "".join(k + ("/" if isinstance(v, dict) else "") + "\n"
                                   for k, v in node.items())
            else:
                body = str(node)
        return self.reply(200, body, etag)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args()
    with open(a.data) as f:
        tree = json.load(f)
    srv = Server((a.host, a.port), Handler)
    srv.state = State(tree)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, a.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
