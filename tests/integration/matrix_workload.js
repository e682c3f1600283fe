// matrix_workload.js -- the Node.js driver (mongodb@6) side of the
// cross-driver replay matrix (test_replay_matrix.py): the calls of
// matrix_workload.py, one JSON line each: {"call": NAME, "ok": RESULT} or
// {"call": NAME, "error": CODE}.
//
//     node matrix_workload.js URI
'use strict';
const path = require('path');
const { MongoClient } = require(path.join(__dirname, 'node_modules', 'mongodb'));
const { EJSON } = require(path.join(__dirname, 'node_modules', 'bson'));

function calls(db) {
  const col = db.collection('test_col');
  const many = db.collection('many');
  return [
    ['find_one', () => col.findOne({ _id: 'test-doc-1' })],
    ['find_empty', () => col.find({ _id: 'nope' }).toArray()],
    ['find_batches', async () => (await many.find({}, { batchSize: 100 }).toArray()).map((d) => d.x)],
    ['aggregate', () => many.aggregate([{ $count: 'count' }]).toArray()],
    ['count', () => many.estimatedDocumentCount()],
    ['insert', async () => (await col.insertOne({ _id: 'ins-1', value: 7 })).acknowledged],
    ['update', async () => (await col.updateOne({ _id: 'test-doc-1' }, { $set: { value: 43 } })).modifiedCount],
    ['find_and_modify', () => col.findOneAndUpdate({ _id: 'test-doc-1' }, { $set: { value: 44 } })],
    ['delete', async () => (await col.deleteOne({ _id: 'ins-1' })).deletedCount],
    ['fail', () => db.command({ fail_me: 1 })],
  ];
}

async function main() {
  const client = new MongoClient(process.argv[2], { serverSelectionTimeoutMS: 5000, maxPoolSize: 1 });
  await client.connect();
  for (const [name, fn] of calls(client.db('benchmark_db'))) {
    let out;
    try {
      out = { call: name, ok: await fn() };
    } catch (e) {
      out = { call: name, error: e.code === undefined ? String(e.name) : e.code };
    }
    console.log(EJSON.stringify(out, { relaxed: true }));
  }
  await client.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
