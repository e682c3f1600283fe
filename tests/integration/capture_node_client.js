// capture_node_client.js -- the Node.js driver (mongodb@6) as a client of
// `mtrace capture` (test_capture_node.py).
//
//     node capture_node_client.js URI SEQ PAR
//
// Runs SEQ sequential findOne calls, then PAR concurrent ones, a cursor over
// benchmark_db.many (batchSize 100), an insertOne and a failing command
// (fail_me, expected to fail with code 2).  Checks every answer and prints
// one JSON line: {"ok": true, "ids": [requestId of each command started],
// "names": {commandName: count}} -- or {"ok": false, "error": "..."}.
'use strict';
const path = require('path');
const { MongoClient } = require(path.join(__dirname, 'node_modules', 'mongodb'));

function expectDoc(d, what) {
  if (!d || d._id !== 'test-doc-1' || d.value !== 42)
    throw new Error(what + ': wrong document ' + JSON.stringify(d));
}

async function main() {
  const [uri, seqArg, parArg] = process.argv.slice(2);
  const ids = [];
  const names = {};
  const client = new MongoClient(uri, {
    monitorCommands: true, serverSelectionTimeoutMS: 5000, maxPoolSize: 20,
  });
  client.on('commandStarted', (ev) => {
    ids.push(ev.requestId);
    names[ev.commandName] = (names[ev.commandName] || 0) + 1;
  });
  await client.connect();
  const db = client.db('benchmark_db');
  const col = db.collection('test_col');
  for (let i = 0; i < Number(seqArg); i++)
    expectDoc(await col.findOne({ _id: 'test-doc-1' }), 'sequential findOne');
  const par = [];
  for (let i = 0; i < Number(parArg); i++) par.push(col.findOne({ _id: 'test-doc-1' }));
  for (const d of await Promise.all(par)) expectDoc(d, 'concurrent findOne');
  const many = await db.collection('many').find({}, { batchSize: 100 }).toArray();
  if (many.length !== 250 || many[249].x !== 249 * 249)
    throw new Error('cursor: got ' + many.length + ' documents');
  const ins = await db.collection('other').insertOne({ k: 1 });
  if (!ins.acknowledged) throw new Error('insertOne not acknowledged');
  let failed = false;
  try {
    await db.command({ fail_me: 1 });
  } catch (e) {
    if (e.code !== 2) throw new Error('fail_me: code ' + e.code);
    failed = true;
  }
  if (!failed) throw new Error('fail_me succeeded');
  await client.close();
  console.log(JSON.stringify({ ok: true, ids, names }));
}

main().catch((e) => {
  console.log(JSON.stringify({ ok: false, error: String(e && e.stack || e) }));
  process.exit(1);
});
