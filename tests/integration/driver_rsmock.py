#!/usr/bin/python3
"""driver_rsmock.py -- mockmongo.py's MongoDB 7.0 answers, but as the
primary of a 3-member replica set "rs0" whose other members
(127.0.0.1:1 and :2, nothing listens there) and arbiter are only names, as
a capture through a proxy to one member of a real set records them.
Every command reply carries operationTime, as a member's does, so a
causally consistent session (pymongo's explicit sessions) sends
readConcern.afterClusterTime with its next read; commitTransaction and
abortTransaction succeed, so pymongo's transactions run.
Prints "READY <port>", serves until SIGTERM.  For test_driver_replset.py
and test_replay_sessions.py.
"""
import datetime
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mockmongo  # noqa: E402
from bson.int64 import Int64  # noqa: E402
from bson.objectid import ObjectId  # noqa: E402
from bson.timestamp import Timestamp  # noqa: E402


class ReplSet(mockmongo.Mongo70):
    def __init__(self, me):
        super().__init__(topology_version=False)
        self.me = me
        self.optime = 0

    def handle(self, request):
        ok = request.ok

        def ok_at_optime(*args, **kw):
            with self.lock:
                self.optime += 1
                kw.setdefault("operationTime", Timestamp(1700000000, self.optime))
            return ok(*args, **kw)
        request.ok = ok_at_optime
        if request.command_name in ("commitTransaction", "abortTransaction"):
            return request.ok()
        return super().handle(request)

    def hello_doc(self, request):
        d = super().hello_doc(request)
        d.update(setName="rs0", setVersion=1, me=self.me, primary=self.me,
                 hosts=[self.me, "127.0.0.1:1", "127.0.0.1:2"],
                 arbiters=["127.0.0.1:3"], electionId=ObjectId("7fffffff0000000000000001"),
                 lastWrite={"lastWriteDate": datetime.datetime.now(datetime.timezone.utc),
                            "opTime": {"ts": 1, "t": Int64(1)}})
        return d


def start(env):
    """Runs this mock as a process of env (capture_lib.Env); returns its
    port once it listens."""
    import re
    import subprocess
    from capture_lib import PYTHON, check
    p = env.spawn([PYTHON, os.path.abspath(__file__)], stdout=subprocess.PIPE,
                  stderr=subprocess.DEVNULL, text=True)
    m = re.match(r"READY (\d+)", p.stdout.readline())
    check(m is not None, "driver_rsmock.py did not start")
    return int(m.group(1))


def main():
    logic = ReplSet("")
    mockmongo.serve(logic, on_port=lambda port: setattr(logic, "me", "127.0.0.1:%d" % port))


if __name__ == "__main__":
    main()
