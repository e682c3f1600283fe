"""wire_compress_client.py PORT COMPRESSOR -- pymongo (Debian 3.11) against
tests/helpers/wire_peer with compressors=COMPRESSOR: ping, insert_many,
find; the found document's "via" says how the server received the find.
Prints one line per step; exit 0 on success."""
import sys

from pymongo import MongoClient


def main():
    port, comp = sys.argv[1], sys.argv[2]
    c = MongoClient("mongodb://127.0.0.1:%s/?compressors=%s" % (port, comp),
                    serverSelectionTimeoutMS=5000)
    print("ping:", c.admin.command("ping")["ok"])
    coll = c.wire_db.wire_col
    r = coll.insert_many([{"_id": i, "pad": "x" * 40} for i in range(3)])
    print("insert_many:", len(r.inserted_ids))
    docs = list(coll.find({}))
    print("find via:", [d.get("via") for d in docs])
    c.close()
    return 0 if [d.get("via") for d in docs] == [comp] else 1


sys.exit(main())
