// whatif_node_client.js URI SEQ THREADS CALLS -- a "bring your own client"
// for tools/whatif.sh (docs/whatif.md, client contract), with the Node.js
// driver (tests/integration/node_modules/mongodb): findOne({_id:
// "test-doc-1"}) on benchmark_db.test_col timed with process.hrtime;
// SEQ calls one after the other (the first one is not printed), then for
// each T of THREADS (comma-separated, may be empty) T concurrent async
// workers of CALLS calls each.  Node runs JavaScript on one thread: "t10"
// here means 10 requests in flight, not 10 OS threads.
// Prints "node-seq MS" and "node-tT MS" lines, one per call.
//
//   tools/whatif.sh --client "node tests/integration/whatif_node_client.js {uri} {seq} {threads} {calls}"
'use strict';
const { MongoClient } = require('mongodb');

async function timed(col, n, out, label) {
    for (let i = 0; i < n; i++) {
        const t0 = process.hrtime.bigint();
        const d = await col.findOne({ _id: 'test-doc-1' });
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        if (!d || d.value !== 42) throw new Error('unexpected document ' + JSON.stringify(d));
        out.push(label + ' ' + ms.toFixed(5));
    }
}

async function main() {
    const [uri, seqArg, threadsArg, callsArg] = process.argv.slice(2);
    const seq = parseInt(seqArg, 10), calls = parseInt(callsArg, 10);
    if (!uri || !(seq >= 2) || !(calls >= 1)) {
        console.error('usage: whatif_node_client.js URI SEQ THREADS CALLS');
        process.exit(2);
    }
    const threads = (threadsArg || '').split(',').filter((x) => x).map((x) => parseInt(x, 10));
    const client = new MongoClient(uri, { directConnection: true });
    await client.connect();
    const col = client.db('benchmark_db').collection('test_col');
    const out = [];
    await timed(col, seq, out, 'node-seq');
    out.shift(); // warm-up call excluded, as in seed 000
    for (const t of threads) {
        const workers = [];
        for (let w = 0; w < t; w++) workers.push(timed(col, calls, out, 'node-t' + t));
        await Promise.all(workers);
    }
    await client.close();
    process.stdout.write(out.join('\n') + '\n');
}

main().catch((e) => {
    console.error('whatif_node_client: ' + e.message);
    process.exit(1);
});
