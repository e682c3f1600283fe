// wire_compress_client.js PORT COMPRESSOR -- the Node.js driver (mongodb@6)
// against tests/helpers/wire_peer with compressors=[COMPRESSOR]: ping,
// insertMany, find; the found document's "via" says how the server
// received the find. Prints one line per step; exit 0 on success.
const { MongoClient } = require('mongodb');

async function main() {
  const [port, comp] = process.argv.slice(2);
  const c = new MongoClient(`mongodb://127.0.0.1:${port}/`, {
    compressors: [comp], serverSelectionTimeoutMS: 5000, directConnection: true,
  });
  await c.connect();
  console.log('ping:', (await c.db('admin').command({ ping: 1 })).ok);
  const coll = c.db('wire_db').collection('wire_col');
  const r = await coll.insertMany([0, 1, 2].map((i) => ({ _id: i, pad: 'x'.repeat(40) })));
  console.log('insertMany:', r.insertedCount);
  const docs = await coll.find({}).toArray();
  const via = docs.map((d) => d.via);
  console.log('find via:', JSON.stringify(via));
  await c.close();
  return via.length === 1 && via[0] === comp ? 0 : 1;
}

main().then((rc) => process.exit(rc), (e) => { console.error(e); process.exit(1); });
