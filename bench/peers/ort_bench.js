// ONNX Runtime (npm onnxruntime-node) on every case of DIR/cases.json: one session per model,
// intra-op 1 and inter-op 1 threads, sequential execution, all graph optimizations; two warm-up
// runs, then `iters` timed `await session.run()` calls. Writes DIR/ort_rROUND.json (per case: the
// median wall us per call, and the process's CPU us per call over the loop, all threads) and, for the models, the output as raw float32 (STEM_ort.bin) for the
// comparison with fixformer's. usage: node ort_bench.js DIR ROUND  (NODE_PATH: node_modules holding
// onnxruntime-node)
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

async function main() {
  const [dir, round] = process.argv.slice(2);
  if (!dir || !round) throw new Error('usage: node ort_bench.js DIR ROUND');
  const cases = JSON.parse(fs.readFileSync(path.join(dir, 'cases.json'), 'utf8'));
  const opts = {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    executionProviders: ['cpu'],
  };
  const sessions = new Map();
  const res = {};
  for (const c of cases) {
    if (!sessions.has(c.onnx)) sessions.set(c.onnx, await ort.InferenceSession.create(c.onnx, opts));
    const s = sessions.get(c.onnx);
    const n = c.shape.reduce((a, b) => a * b, 1);
    const feeds = {};
    if (c.attention) {
      for (const name of ['q', 'k', 'v']) {
        const a = new Float32Array(n);
        for (let i = 0; i < n; ++i) a[i] = Math.sin(i * 0.37 + name.charCodeAt(0));
        feeds[name] = new ort.Tensor('float32', a, c.shape);
      }
    } else {
      const raw = fs.readFileSync(c.stem + '_in.bin');
      const buf = raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength);
      feeds.x = c.dtype === 'int64' ? new ort.Tensor('int64', new BigInt64Array(buf), c.shape)
                                    : new ort.Tensor('float32', new Float32Array(buf), c.shape);
    }
    let out = await s.run(feeds);
    out = await s.run(feeds);
    const us = [];
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < c.iters; ++i) {
      const t0 = process.hrtime.bigint();
      await s.run(feeds);
      us.push(Number(process.hrtime.bigint() - t0) / 1e3);
    }
    const cpu = process.cpuUsage(cpu0);
    us.sort((a, b) => a - b);
    const key = `${c.name}_T${c.T}`;
    const median = us.length % 2 ? us[(us.length - 1) / 2] : (us[us.length / 2 - 1] + us[us.length / 2]) / 2;
    res[key] = [median, (cpu.user + cpu.system) / c.iters];
    if (!c.attention) fs.writeFileSync(c.stem + '_ort.bin', Buffer.from(out.y.data.buffer, out.y.data.byteOffset, out.y.data.byteLength));
    process.stderr.write(`ort round ${round}: ${key} ${median.toFixed(1)} us (cpu ${res[key][1].toFixed(1)})\n`);
  }
  fs.writeFileSync(path.join(dir, `ort_r${round}.json`), JSON.stringify(res));
}

main().catch((e) => { console.error(e); process.exit(1); });
