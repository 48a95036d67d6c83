// The native face engine on real photos: face counts, landmarks, pose, quality measures, templates,
// bad input, concurrency and closing.
import fs from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import t from 'tap';

import { createEngine } from '../../src/engine';
import { dot as cosine } from '../../src/matching/dot';
import { resolveOrtLibrary } from '../../src/engine/ort-library';
import { nativeTemplateNetworks, readManifest, templateNetworks, type Manifest } from '../../src/engine/template-spec';
import { native, type NativeTemplateNetwork } from '../../src/native';
import type { FaceEngine } from '../../src/engine/types';
import { blurred, darker, loadRgb, mirrored, noise, solid } from '../helpers/images';
import { samplePhotos } from '../helpers/sample-photos';
import { dataPath, needsSharedData, qualityIndex, sharedData } from '../helpers/shared-data';

let engine: FaceEngine;
t.before(async () => { engine = await createEngine(); });
t.teardown(async () => { await engine.close(); });

// The group photos of @vladmandic/face-api's demo, counted by eye.
const SAMPLE_COUNTS = [3, 3, 3, 4, 5, 4];

t.test('counts the faces of the face-api group photos', async (t) => {
  const photos = samplePhotos();
  for (let i = 0; i < photos.length; i++) {
    const faces = await engine.analyze(await loadRgb(photos[i]), { embed: false });
    t.equal(faces.length, SAMPLE_COUNTS[i], `sample${i + 1}.jpg has ${SAMPLE_COUNTS[i]} faces`);
    for (let j = 1; j < faces.length; j++) t.ok(faces[j - 1].faceSize >= faces[j].faceSize, 'largest first');
  }
});

t.test('counts the faces of the annotated scenes (face_count=N)', needsSharedData, async (t) => {
  const rows = qualityIndex().filter((r) => r.condition.startsWith('face_count='));
  t.ok(rows.length >= 8);
  for (const row of rows) {
    const want = Number(row.condition.split('=')[1]);
    const faces = await engine.analyze(await loadRgb(dataPath('quality', row.path)), { embed: false });
    t.equal(faces.length, want, `${row.path}: ${want} faces`);
    // Every annotated nose point lies inside one detected box.
    const noses = row.note.replace('nose points', '').trim().split(/\s+/).filter(Boolean)
      .map((p) => p.split(':').map(Number));
    for (const [x, y] of noses) {
      t.ok(faces.some((f) => x >= f.box.x && x <= f.box.x + f.box.width && y >= f.box.y && y <= f.box.y + f.box.height),
        `${row.path}: nose ${x}:${y} is inside a face box`);
    }
  }
});

t.test('finds no face where there is none', async (t) => {
  t.same(await engine.analyze(solid(640, 480, 200)), [], 'plain image');
  t.same(await engine.analyze(noise(640, 480, 7)), [], 'noise');
  t.same(await engine.analyze(solid(1, 1)), [], '1x1 image');
});

t.test('finds no face in the no_face photos', needsSharedData, async (t) => {
  for (const row of qualityIndex().filter((r) => r.condition === 'no_face')) {
    t.same(await engine.analyze(await loadRgb(dataPath('quality', row.path))), [], row.path);
  }
});

t.test('a face carries consistent landmarks, pose, measures and template', async (t) => {
  const [face] = await engine.analyze(await loadRgb(samplePhotos()[2]), { crop: true, maxFaces: 1 });
  t.ok(face.analyzed);
  t.equal(face.landmarks.length, 68);
  t.equal(face.points5.length, 5);
  const margin = face.box.width * 0.15;
  for (const p of face.landmarks) {
    t.ok(p.x >= face.box.x - margin && p.x <= face.box.x + face.box.width + margin &&
      p.y >= face.box.y - margin && p.y <= face.box.y + face.box.height + margin, 'landmark inside the face box');
  }
  t.ok(face.points5[0].x < face.points5[1].x, 'left eye left of right eye');
  t.ok(face.points5[2].y > face.points5[0].y && face.points5[3].y > face.points5[2].y, 'eyes, nose, mouth top to bottom');
  t.equal(face.embedding.length, 512 + 192, 'fr_feature and MobileFaceNet parts');
  t.equal(engine.templateSize, face.embedding.length, 'templateSize tells the length');
  t.ok(Math.abs(cosine(face.embedding, face.embedding) - 1) < 1e-4, 'template is L2-normalised');
  t.equal(face.alignedCrop?.length, 112 * 112 * 3, '112x112 RGB aligned crop');
  for (const v of [face.eyes.left, face.eyes.right, face.liveness, face.sunglasses]) t.ok(v >= 0 && v <= 1);
  t.ok(face.brightness > 0 && face.brightness < 255);
  t.ok(face.eyeDistance > 0 && face.eyeDistance < face.faceSize);
  // Faces beyond maxFaces are located but not analysed.
  const rest = (await engine.analyze(await loadRgb(samplePhotos()[2]), { maxFaces: 1 })).slice(1);
  t.ok(rest.length > 0 && rest.every((f) => !f.analyzed && f.embedding.length === 0 && f.landmarks.length === 68));
});

t.test('yaw changes sign on a mirrored photo; darker and blurred copies measure so', async (t) => {
  // A photo with a clearly turned head: from ../shared/data when present, else a face-api demo photo.
  const image = await loadRgb(sharedData ? dataPath('identities', 'deepface', 'img11.jpg') : samplePhotos()[0]);
  const [face] = await engine.analyze(image, { maxFaces: 1 });
  const [flipped] = await engine.analyze(await mirrored(image), { maxFaces: 1 });
  t.ok(Math.abs(face.pose.yaw) > 3, `the photo has a measurable yaw (${face.pose.yaw.toFixed(1)})`);
  t.ok(Math.sign(face.pose.yaw) === -Math.sign(flipped.pose.yaw), `yaw ${face.pose.yaw.toFixed(1)} vs mirrored ${flipped.pose.yaw.toFixed(1)}`);
  t.ok(Math.sign(face.pose.roll) === -Math.sign(flipped.pose.roll) || Math.abs(face.pose.roll) < 2, 'roll flips too');
  t.ok(cosine(face.embedding, flipped.embedding) > 0.8, 'mirror image is the same person');

  const [dark] = await engine.analyze(await darker(image), { maxFaces: 1 });
  t.ok(dark.brightness < face.brightness * 0.6, `darker copy: ${dark.brightness.toFixed(0)} < ${face.brightness.toFixed(0)}`);
  const [soft] = await engine.analyze(await blurred(image, 4), { maxFaces: 1 });
  t.ok(soft && soft.sharpness < face.sharpness / 2, `blurred copy: ${soft?.sharpness.toFixed(0)} < ${face.sharpness.toFixed(0)}`);
});

t.test('same-person pairs score higher than different-person pairs (identities)', needsSharedData, async (t) => {
  const fs = await import('node:fs');
  const rows = fs.readFileSync(dataPath('identities', 'identities.csv'), 'utf8').trim().split('\n').slice(1)
    .map((l) => l.split(',')).filter(([p]) => p.includes('deepface/') || p.includes('face_recognition/'));
  const templates: { id: string; t: Float32Array }[] = [];
  for (const [file, id] of rows) {
    const faces = await engine.analyze(await loadRgb(dataPath('identities', file)), { maxFaces: 1 });
    if (faces.length) templates.push({ id, t: faces[0].embedding });
  }
  t.ok(templates.length >= rows.length * 0.9, `templates for ${templates.length}/${rows.length} photos`);
  const same: number[] = [], diff: number[] = [];
  for (let i = 0; i < templates.length; i++) {
    for (let j = i + 1; j < templates.length; j++) {
      (templates[i].id === templates[j].id ? same : diff).push(cosine(templates[i].t, templates[j].t));
    }
  }
  const mean = (a: number[]) => a.reduce((s, v) => s + v, 0) / a.length;
  t.ok(mean(same) > mean(diff) + 0.3, `mean same ${mean(same).toFixed(3)} vs different ${mean(diff).toFixed(3)}`);
  // Ranking: for most templates the nearest other template is the same person.
  let rank1 = 0;
  for (let i = 0; i < templates.length; i++) {
    let best = -2, bestId = '';
    for (let j = 0; j < templates.length; j++) {
      if (i === j) continue;
      const s = cosine(templates[i].t, templates[j].t);
      if (s > best) { best = s; bestId = templates[j].id; }
    }
    if (bestId === templates[i].id) rank1++;
  }
  t.ok(rank1 / templates.length > 0.9, `rank-1 identification ${rank1}/${templates.length}`);
});

t.test('the template is each network\'s embedding of the aligned crop, normalised and weighted', async (t) => {
  // Each part, recomputed here with onnxruntime-node from the returned aligned crop and the manifest's
  // normalisation, points the same way as the engine's (the crop is rounded to bytes, so not bit for bit):
  // a wrong channel order, normalisation or model in either network would not.
  const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'models', 'manifest.json'), 'utf8'));
  const [face] = await engine.analyze(await loadRgb(samplePhotos()[2]), { crop: true, maxFaces: 1 });
  const crop = face.alignedCrop!;
  let offset = 0;
  for (const { id, weight } of manifest.template.models as { id: string; weight: number }[]) {
    const m = manifest.models.find((x: { id: string }) => x.id === id);
    // the file the engine loads at its default precision (an int8 form where the manifest has one)
    const file = templateNetworks().find((n) => n.id === id)!.file;
    const session = await ort.InferenceSession.create(path.join(__dirname, '..', '..', 'models', file), { logSeverityLevel: 3 });
    const input = new Float32Array(3 * 112 * 112);
    const order = m.input.channels === 'BGR' ? [2, 1, 0] : [0, 1, 2];
    for (let c = 0; c < 3; c++) {
      for (let i = 0; i < 112 * 112; i++) input[c * 112 * 112 + i] = (crop[i * 3 + order[c]] - m.input.mean[c]) / m.input.std[c];
    }
    const out = await session.run({ [m.input.name]: new ort.Tensor('float32', input, [1, 3, 112, 112]) });
    await session.release();
    const reference = out[Object.keys(m.outputs)[0]].data as Float32Array;
    const part = face.embedding.subarray(offset, offset + reference.length);
    offset += reference.length;
    const norm = Math.sqrt(cosine(part, part)), refNorm = Math.sqrt(cosine(reference, reference));
    t.ok(Math.abs(norm * norm - weight) < 1e-4, `${id}: its part carries weight ${weight} (${(norm * norm).toFixed(5)})`);
    const c = cosine(part, reference) / (norm * refNorm);
    // int8 networks move more with the byte rounding of the crop (quantised activations round it again)
    const bound = file.endsWith('.int8.onnx') ? 0.99 : 0.999;
    t.ok(c > bound, `${id}: the engine's part matches the network run on the crop (cosine ${c.toFixed(5)} > ${bound})`);
  }
  t.equal(offset, face.embedding.length, 'the parts make up the whole template');
});

t.test('flip-averaging is off by default, an option with its own model id, and the same face either way', async (t) => {
  const flip = await createEngine({ flipAverage: true });
  t.teardown(() => flip.close());
  t.notMatch(engine.modelId, /\+flip$/, 'default templates are plain');
  t.match(flip.modelId, /\+flip$/, 'flip-averaged templates are told apart');
  t.equal(flip.modelId.replace(/\+flip$/, ''), engine.modelId);
  const image = await loadRgb(samplePhotos()[2]);
  const [plain] = await engine.analyze(image, { maxFaces: 1 });
  const [averaged] = await flip.analyze(image, { maxFaces: 1 });
  const c = cosine(plain.embedding, averaged.embedding);
  t.ok(c > 0.9 && c < 0.99999, `the mirror image moves the template a little (cosine ${c.toFixed(4)})`);
});

const modelDir = path.join(__dirname, '..', '..', 'models');
// The manifest, not C++, says what each network is fed and gives back.
const manifestNetworks = nativeTemplateNetworks(templateNetworks());

t.test('an engine loaded without template networks (the device camera\'s) finds faces but does not embed', async (t) => {
  const handle = await native.createEngine({ modelDir, ortLibrary: resolveOrtLibrary() });
  t.teardown(() => handle.close());
  const image = await loadRgb(samplePhotos()[2]);
  const { faces } = await handle.analyze(image.data, image.width, image.height, { embed: false, maxFaces: 1 });
  t.ok(faces.length >= 1, 'faces found');
  await t.rejects(handle.analyze(image.data, image.width, image.height, { maxFaces: 1 }), /without embedding models/, 'embedding refused');
  await t.rejects(native.createEngine({ modelDir, ortLibrary: resolveOrtLibrary(), templateNetworks: [{ ...manifestNetworks[0], channels: 'BGRA' as 'BGR' }] }),
    { name: 'Error', status: 'FieldsValidation', message: /channels must be RGB or BGR/ }, 'a malformed network is refused before loading');
  await t.rejects(native.createEngine({ modelDir, ortLibrary: resolveOrtLibrary(), templateNetworks: manifestNetworks.map((n) => ({ ...n, weight: 0.7 })) }),
    /sum to 1/, 'weights that do not sum to 1');
});

t.test('the manifest drives the embedder: its networks, their normalisation and sizes', async (t) => {
  const image = await loadRgb(samplePhotos()[2]);
  const embed = async (networks: NativeTemplateNetwork[]) => {
    const handle = await native.createEngine({ modelDir, ortLibrary: resolveOrtLibrary(), templateNetworks: networks });
    try {
      return (await handle.analyze(image.data, image.width, image.height, { maxFaces: 1 })).faces[0].embedding;
    } finally {
      await handle.close();
    }
  };
  const reference = (await engine.analyze(image, { maxFaces: 1 }))[0].embedding;
  t.same(await embed(manifestNetworks), reference, 'the manifest\'s networks give the engine\'s template');

  const [feature] = manifestNetworks;
  const alone = await embed([{ ...feature, weight: 1 }]);
  t.equal(alone.length, feature.outputSize, 'one network: a template of its size');
  t.ok(cosine(alone, reference.subarray(0, feature.outputSize).map((v) => v / Math.sqrt(feature.weight))) > 0.9999,
    'the same network gives the same embedding');

  const swapped = await embed([{ ...feature, weight: 1, channels: feature.channels === 'RGB' ? 'BGR' : 'RGB' }]);
  t.ok(cosine(swapped, alone) < 0.999, 'the channel order is the one passed in');
  const shifted = await embed([{ ...feature, weight: 1, mean: feature.mean.map((m) => m + 40) }]);
  t.ok(cosine(shifted, alone) < 0.999, 'the normalisation is the one passed in');
});

t.test('the manifest is checked before it reaches the engine', async (t) => {
  const manifest = readManifest();
  const edit = (change: (m: Manifest) => void): Manifest => {
    const copy = JSON.parse(JSON.stringify(manifest)) as Manifest;
    change(copy);
    return copy;
  };
  const feature = (m: Manifest) => m.models.find((x) => x.id === m.template.models[0].id)!;
  t.equal(templateNetworks(manifest).length, manifest.template.models.length);
  t.throws(() => templateNetworks(edit((m) => { m.template.models[0].weight = 0.9; })), /sum to 1/);
  t.throws(() => templateNetworks(edit((m) => { feature(m).input.channels = 'GREY'; })), /channels must be RGB or BGR/);
  t.throws(() => templateNetworks(edit((m) => { feature(m).input.shape = [1, 1, 112, 112]; })), /input.shape/);
  t.throws(() => templateNetworks(edit((m) => { feature(m).input.std = [128, 0, 128]; })), /input.std/);
  t.throws(() => templateNetworks(edit((m) => { feature(m).outputs = { a: [1, 512], b: [1, 4] }; })), /exactly one output/);
  t.throws(() => templateNetworks(edit((m) => { m.template.models[0].id = 'nope'; })), /unknown model nope/);
});

t.test('bad input gives a typed error, never a crash', async (t) => {
  const bad: [string, Uint8Array, number, number][] = [
    ['empty buffer', new Uint8Array(0), 10, 10],
    ['truncated buffer', new Uint8Array(10 * 10 * 3 - 1), 10, 10],
    ['RGBA-sized buffer', new Uint8Array(10 * 10 * 4), 10, 10],
    ['zero width', new Uint8Array(0), 0, 10],
    ['fractional size', new Uint8Array(300), 10.5, 10],
    ['negative size', new Uint8Array(300), -10, -10],
    ['over the pixel limit', new Uint8Array(3), 20000, 20000],
  ];
  for (const [what, data, width, height] of bad) {
    await t.rejects(engine.analyze({ data, width, height }), { name: 'Error', status: 'FieldsValidation' }, what);
  }
  // @ts-expect-error: wrong types from JavaScript callers
  await t.rejects(engine.analyze({ data: 'pixels', width: 1, height: 1 }), { name: 'Error', status: 'FieldsValidation' }, 'not a Uint8Array');
});

t.test('concurrent analyses are correct and never stall the event loop', async (t) => {
  const image = await loadRgb(samplePhotos()[0]);
  const reference = await engine.analyze(image);
  let worstGap = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    worstGap = Math.max(worstGap, now - last - 10);
    last = now;
  }, 10);
  const results = await Promise.all(Array.from({ length: 20 }, () => engine.analyze(image)));
  clearInterval(timer);
  t.ok(worstGap < 50, `event loop never stalled more than 50 ms (worst ${worstGap.toFixed(1)} ms)`);
  for (const faces of results) {
    t.equal(faces.length, reference.length);
    t.ok(cosine(faces[0].embedding, reference[0].embedding) > 0.9999, 'same result as a lone call');
  }
});

t.test('close is refused while analyses run, then every call rejects', async (t) => {
  const own = await createEngine();
  const image = await loadRgb(samplePhotos()[1]);
  const running = own.analyze(image);
  await t.rejects(own.close(), { name: 'Error', status: 'ServiceUnavailable' }, 'busy');
  t.equal((await running).length, 3);
  await own.close();
  await t.rejects(own.analyze(image), { name: 'Error', status: 'ServiceUnavailable' }, 'closed');
});
