#!/usr/bin/python3
"""replay_monitor.py URI SECONDS -- keeps a pymongo client open for SECONDS
with heartbeatFrequencyMS=500 after one find_one, then prints one JSON line:
{"doc": ..., "heartbeats": n, "awaited": n, "failed": n}.  With a server
that has topologyVersion, pymongo 3.11 uses the streaming (awaitable)
hello, so "awaited" counts the replies the server held."""
import json
import sys
import time

from pymongo import MongoClient, monitoring


class Beats(monitoring.ServerHeartbeatListener):
    def __init__(self):
        self.ok = self.awaited = self.nfailed = 0
        self.counting = False

    def started(self, event):
        pass

    def succeeded(self, event):
        if self.counting:
            self.ok += 1
            self.awaited += bool(getattr(event, "awaited", False))

    def failed(self, event):
        if self.counting:
            self.nfailed += 1


def main():
    beats = Beats()
    client = MongoClient(sys.argv[1], heartbeatFrequencyMS=500,
                         serverSelectionTimeoutMS=5000, event_listeners=[beats])
    doc = client.benchmark_db.test_col.find_one({"_id": "test-doc-1"})
    beats.counting = True
    time.sleep(float(sys.argv[2]))
    beats.counting = False
    print(json.dumps({"doc": doc, "heartbeats": beats.ok,
                      "awaited": beats.awaited, "failed": beats.nfailed}))
    client.close()


if __name__ == "__main__":
    main()
