// Shrinks a screenshot for the repository: an 8-bit RGB(A) PNG re-encoded with a palette of at
// most 256 colours (the most frequent colours at 5 bits per channel, each pixel mapped to the
// nearest of them). A console screenshot has few colours, so it reads the same at a third of the
// size. Used by scripts/screenshots.mjs; Node's zlib only.
import { crc32, deflateSync, inflateSync } from 'node:zlib';

function chunks(png) {
  const out = [];
  for (let at = 8; at < png.length;) {
    const len = png.readUInt32BE(at);
    out.push({ type: png.toString('latin1', at + 4, at + 8), data: png.subarray(at + 8, at + 8 + len) });
    at += 12 + len;
  }
  return out;
}

// -> {width, height, rgb: Buffer (3 bytes a pixel)}
export function decodePng(png) {
  const list = chunks(png);
  const ihdr = list.find((c) => c.type === 'IHDR').data;
  const width = ihdr.readUInt32BE(0);
  const height = ihdr.readUInt32BE(4);
  const [depth, colorType, , , interlace] = ihdr.subarray(8);
  const channels = { 2: 3, 6: 4 }[colorType];
  if (depth !== 8 || !channels || interlace) throw new Error(`png_palette: only 8-bit RGB/RGBA, non-interlaced PNGs (got depth ${depth}, colour type ${colorType}, interlace ${interlace})`);
  const raw = inflateSync(Buffer.concat(list.filter((c) => c.type === 'IDAT').map((c) => c.data)));
  const stride = width * channels;
  const pix = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const src = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const row = pix.subarray(y * stride, (y + 1) * stride);
    const prev = y ? pix.subarray((y - 1) * stride, y * stride) : null;
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? row[i - channels] : 0;
      const b = prev ? prev[i] : 0;
      const c = prev && i >= channels ? prev[i - channels] : 0;
      let p;
      if (filter === 0) p = 0;
      else if (filter === 1) p = a;
      else if (filter === 2) p = b;
      else if (filter === 3) p = (a + b) >> 1;
      else if (filter === 4) {
        const pa = Math.abs(b - c);
        const pb = Math.abs(a - c);
        const pc = Math.abs(a + b - 2 * c);
        p = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      } else throw new Error(`png_palette: bad filter ${filter} in row ${y}`);
      row[i] = (src[i] + p) & 0xff;
    }
  }
  const rgb = Buffer.alloc(width * height * 3);
  for (let i = 0, j = 0; i < pix.length; i += channels, j += 3) { rgb[j] = pix[i]; rgb[j + 1] = pix[i + 1]; rgb[j + 2] = pix[i + 2]; }
  return { width, height, rgb };
}

function chunk(type, data) {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])) >>> 0, 0);
  return Buffer.concat([head, data, crc]);
}

export function paletteEncode({ width, height, rgb }) {
  const bin = (i) => ((rgb[i] >> 3) << 10) | ((rgb[i + 1] >> 3) << 5) | (rgb[i + 2] >> 3);
  const counts = new Float64Array(32768);
  const sums = new Float64Array(32768 * 3);
  for (let i = 0; i < rgb.length; i += 3) {
    const k = bin(i);
    counts[k]++;
    sums[k * 3] += rgb[i]; sums[k * 3 + 1] += rgb[i + 1]; sums[k * 3 + 2] += rgb[i + 2];
  }
  const used = [...counts.keys()].filter((k) => counts[k] > 0).sort((a, b) => counts[b] - counts[a]).slice(0, 256);
  const palette = used.map((k) => [0, 1, 2].map((c) => Math.round(sums[k * 3 + c] / counts[k])));
  const index = new Int16Array(32768).fill(-1);
  used.forEach((k, i) => { index[k] = i; });
  const nearest = (k) => {
    const r = ((k >> 10) << 3) + 4;
    const g = (((k >> 5) & 31) << 3) + 4;
    const b = ((k & 31) << 3) + 4;
    let best = 0;
    let dist = Infinity;
    palette.forEach(([pr, pg, pb], i) => {
      const d = (pr - r) ** 2 + (pg - g) ** 2 + (pb - b) ** 2;
      if (d < dist) { dist = d; best = i; }
    });
    return best;
  };
  const raw = Buffer.alloc((width + 1) * height);
  for (let y = 0; y < height; y++) {
    raw[y * (width + 1)] = 0;
    for (let x = 0; x < width; x++) {
      const k = bin((y * width + x) * 3);
      if (index[k] < 0) index[k] = nearest(k);
      raw[y * (width + 1) + 1 + x] = index[k];
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 3, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr), chunk('PLTE', Buffer.from(palette.flat())),
    chunk('IDAT', deflateSync(raw, { level: 9 })), chunk('IEND', Buffer.alloc(0)),
  ]);
}
