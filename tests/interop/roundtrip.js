'use strict';
// Drive rocketq with a real third-party RocketMQ 4.x client: ali-ons (pure JavaScript).
// usage: node roundtrip.js <nameSrv> <topic> <count>
// With ROCKETMQ_ACCESS_KEY and ROCKETMQ_SECRET_KEY set, both clients sign every request
// (ali-ons' accessKeyId/accessKeySecret), for a broker with aclEnable=true.
// A producer sends <count> messages (tag + keys); a push consumer in another group reads them all
// from the first offset. Prints one JSON line with what was sent and received, exits 0 on success.
const { Producer, Consumer, Message } = require('ali-ons');

const [nameSrv, topic, countArg] = process.argv.slice(2);
const count = Number(countArg || '20');
const deadline = Date.now() + 60000;
const errors = [];
const credentials = process.env.ROCKETMQ_ACCESS_KEY
  ? { accessKeyId: process.env.ROCKETMQ_ACCESS_KEY, accessKeySecret: process.env.ROCKETMQ_SECRET_KEY }
  : {};

async function main() {
  const stamp = Date.now();
  const producer = new Producer({ httpclient: {}, nameSrv, producerGroup: `interop-pg-${stamp}`, ...credentials });
  producer.on('error', err => errors.push(`producer: ${err.message}`));
  await producer.ready();
  const sent = [];
  for (let i = 0; i < count; i++) {
    const msg = new Message(topic, i % 2 ? 'TagB' : 'TagA', Buffer.from(`interop message ${i}`));
    msg.keys = [`interop-key-${i}`];
    const result = await producer.send(msg);
    sent.push({ status: result.sendStatus, msgId: result.msgId, queueId: result.messageQueue.queueId, queueOffset: result.queueOffset });
  }
  const received = new Map();
  const consumer = new Consumer({
    httpclient: {},
    nameSrv,
    consumerGroup: `interop-cg-${stamp}`,
    consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET',
    ...credentials,
  });
  consumer.on('error', err => errors.push(`consumer: ${err.message}`));
  consumer.subscribe(topic, '*', async msg => {
    received.set(msg.body.toString(), { tags: msg.tags, keys: msg.keys, queueId: msg.queueId, queueOffset: msg.queueOffset });
  });
  await consumer.ready();
  while (received.size < count && Date.now() < deadline) {
    await new Promise(resolve => setTimeout(resolve, 50));
  }
  await consumer.close();
  await producer.close();
  const ok = sent.every(s => s.status === 'SEND_OK') && received.size === count;
  console.log(JSON.stringify({ ok, sent, received: Object.fromEntries(received), errors }));
  process.exit(ok ? 0 : 1);
}

main().catch(err => {
  console.log(JSON.stringify({ ok: false, fatal: String(err && err.stack || err), errors }));
  process.exit(2);
});
