// Runs a model written by `ampgan export-onnx` with onnxruntime (npm's onnxruntime-node, its CPU
// runtime) on given latents (and, for a class-conditional model, classes) and writes the images
// as raw float32, for tests/test_onnx.cpp.
//
//   node ort_run.js NODE_MODULES MODEL.onnx LATENTS.f32 N OUT.f32 [CLASSES.i64]
//
// CLASSES.i64: N little-endian int64 values, fed as the input "class".
//
// Prints one line "OK {json}": the output's name, type and dimensions.
'use strict';
const fs = require('fs');
const path = require('path');

async function main() {
  const [modules, model, latents, n, out, classes] = process.argv.slice(2);
  const ort = require(path.join(modules, 'onnxruntime-node'));
  const bytes = fs.readFileSync(latents);
  const z = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
  const count = Number(n);
  const session = await ort.InferenceSession.create(model, {executionProviders: ['cpu']});
  const feeds = {[session.inputNames[0]]: new ort.Tensor('float32', z, [count, z.length / count])};
  if (classes) {
    const c = fs.readFileSync(classes);
    // A copy: a BigInt64Array needs an 8-byte aligned offset, which the file's Buffer need not have.
    const ids = new BigInt64Array(c.buffer.slice(c.byteOffset, c.byteOffset + c.length));
    feeds['class'] = new ort.Tensor('int64', ids, [count]);
  }
  const result = await session.run(feeds);
  const name = session.outputNames[0];
  const y = result[name];
  fs.writeFileSync(out, Buffer.from(y.data.buffer, y.data.byteOffset, y.data.byteLength));
  console.log('OK ' + JSON.stringify({name, type: y.type, dims: y.dims, version: ort.env.versions.node}));
}

main().catch((e) => {
  console.error('ort_run.js: ' + (e && e.stack ? e.stack : e));
  process.exit(1);
});
