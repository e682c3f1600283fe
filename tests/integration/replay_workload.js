// replay_workload.js -- the Node.js driver (mongodb@6) workload of the replay
// tests: run against MockupDB through `mtrace capture`, then against
// `mtrace replay` of that trace.  Prints one JSON line per call.
//
//     node replay_workload.js URI [--linger-ms N] [--miss]
//
// --miss adds a query that no trace of this workload holds.
//
// --linger-ms keeps the client open that long after the calls (so its
// monitor exchanges a few heartbeats; with a streaming monitor, the
// server must hold or stream the hello replies without the monitor timing
// out or busy-looping), then prints {"heartbeats": n, "failed": n}.
'use strict';
const path = require('path');
const { MongoClient } = require(path.join(__dirname, 'node_modules', 'mongodb'));
const { EJSON } = require(path.join(__dirname, 'node_modules', 'bson'));

async function calls(db) {
  const col = db.collection('test_col');
  const many = db.collection('many');
  return [
    ['ping', async () => (await db.command({ ping: 1 })).ok],
    ['find_one', () => col.findOne({ _id: 'test-doc-1' })],
    ['find_empty', () => col.find({ _id: 'nope' }).toArray()],
    ['many_3_batches', async () => (await many.find({}, { batchSize: 100 }).toArray()).map((d) => d.x)],
    ['many_killed', async () => {
      const c = many.find({}, { batchSize: 10 });
      const d = await c.next();
      await c.close();
      return d;
    }],
    ['insert_one', async () => (await col.insertOne({ value: 7 })).acknowledged],
    ['update', async () => (await col.updateOne({ _id: 'test-doc-1' }, { $set: { value: 43 } })).modifiedCount],
    ['aggregate', () => many.aggregate([{ $count: 'count' }]).toArray()],
    ['fail_me', () => db.command({ fail_me: 1 })],
  ];
}

async function main() {
  const uri = process.argv[2];
  const li = process.argv.indexOf('--linger-ms');
  const linger = li > 0 ? Number(process.argv[li + 1]) : 0;
  const client = new MongoClient(uri, {
    serverSelectionTimeoutMS: 5000,
    heartbeatFrequencyMS: 500,
    maxPoolSize: 1,
  });
  let beats = 0, failed = 0;
  client.on('serverHeartbeatSucceeded', () => beats++);
  client.on('serverHeartbeatFailed', () => failed++);
  await client.connect();
  const db = client.db('benchmark_db');
  const list = await calls(db);
  if (process.argv.includes('--miss'))
    list.push(['miss', () => db.collection('test_col').findOne({ _id: 'never-recorded' })]);
  for (const [label, fn] of list) {
    let out;
    try {
      out = { call: label, ok: await fn() };
    } catch (e) {
      out = { call: label, error: e.code === undefined ? String(e.name) : e.code };
    }
    console.log(EJSON.stringify(out, { relaxed: true }));
  }
  if (linger > 0) {
    beats = 0;
    failed = 0;
    await new Promise((r) => setTimeout(r, linger));
    console.log(JSON.stringify({ heartbeats: beats, failed }));
  }
  await client.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
