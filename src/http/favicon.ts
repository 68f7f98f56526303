// Trackway's icon, served at /favicon.ico and named by a <link rel="icon"> on
// every page (dashboard, /docs, /docs/webhooks): a white "T" on a teal
// rounded square, 32×32. Drawn here as pixels and packed as an ICO holding
// one 32-bit BMP, so there is no binary file to keep in the repository.

const SIZE = 32;
const TEAL = [0x0f, 0x76, 0x6e]; // r, g, b
const WHITE = [0xff, 0xff, 0xff];

/** The colour of a pixel (x right, y down), or undefined where the icon is transparent. */
function pixel(x: number, y: number): number[] | undefined {
  const r = 6; // corner radius
  const cx = Math.min(Math.max(x + 0.5, r), SIZE - r);
  const cy = Math.min(Math.max(y + 0.5, r), SIZE - r);
  if ((x + 0.5 - cx) ** 2 + (y + 0.5 - cy) ** 2 > r * r) return undefined;
  const bar = y >= 7 && y < 12 && x >= 7 && x < 25;
  const stem = y >= 7 && y < 26 && x >= 13 && x < 19;
  return bar || stem ? WHITE : TEAL;
}

function buildIco(): Buffer {
  const header = Buffer.alloc(40); // BITMAPINFOHEADER; the height counts the XOR and the AND masks
  header.writeUInt32LE(40, 0);
  header.writeInt32LE(SIZE, 4);
  header.writeInt32LE(SIZE * 2, 8);
  header.writeUInt16LE(1, 12);
  header.writeUInt16LE(32, 14);
  const colours = Buffer.alloc(SIZE * SIZE * 4);
  const mask = Buffer.alloc((SIZE * SIZE) / 8); // 1 bit a pixel, rows of 4 bytes: 1 = transparent
  for (let row = 0; row < SIZE; row++) {
    const y = SIZE - 1 - row; // bottom-up
    for (let x = 0; x < SIZE; x++) {
      const c = pixel(x, y);
      const at = (row * SIZE + x) * 4;
      if (c)
        colours.set([c[2]!, c[1]!, c[0]!, 0xff], at); // BGRA
      else mask[row * (SIZE / 8) + (x >> 3)]! |= 0x80 >> (x & 7);
    }
  }
  const image = Buffer.concat([header, colours, mask]);
  const dir = Buffer.alloc(6 + 16);
  dir.writeUInt16LE(1, 2); // type: icon
  dir.writeUInt16LE(1, 4); // one image
  dir.writeUInt8(SIZE, 6);
  dir.writeUInt8(SIZE, 7);
  dir.writeUInt16LE(1, 10); // planes
  dir.writeUInt16LE(32, 12); // bits per pixel
  dir.writeUInt32LE(image.length, 14);
  dir.writeUInt32LE(dir.length, 18);
  return Buffer.concat([dir, image]);
}

export const FAVICON_ICO = buildIco();

/** The <link> element every page's <head> carries. */
export const FAVICON_LINK = '<link rel="icon" type="image/x-icon" href="/favicon.ico">';
