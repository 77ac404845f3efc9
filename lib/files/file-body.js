'use strict';

const fs = require('node:fs');
const { Readable } = require('node:stream');

// A body this long or shorter is read whole at once (one read, one write); a longer one is streamed.
const WHOLE_LIMIT = 64 * 1024;
// What a streamed body reads at a time: as much as a socket write takes well.
const READ_SIZE = 64 * 1024;

/**
 * The body of a file's answer from its open descriptor, which it owns (and
 * closes, whatever becomes of the answer): the bytes `start` to `end`
 * (inclusive), read whole when short, else streamed with backpressure (the
 * reader pauses while the client takes no more: memory stays flat however
 * large the file); or, for several ranges, `multipart/byteranges`' parts
 * between the file's slices. A streamed body is read on the calling thread,
 * a piece each time the client can take one, as a short one is and as
 * nginx reads without sendfile: a read through libuv's threadpool costs a
 * round trip between threads per piece, more here than copying the 64 KB
 * (a 100 MB file: about 700 MB per CPU-second through fs.ReadStream, 1100
 * read here).
 *
 * @param {number} fd
 * @param {number} start
 * @param {number} end inclusive; below `start` for an empty body
 * @param {boolean} [whole] read whole however long (a file to be remembered: remembered.js bounds it)
 * @returns {Buffer | Readable}
 */
function fileBody(fd, start, end, whole = false) {
  const length = end - start + 1;
  if (whole || length <= WHOLE_LIMIT) {
    try {
      return readWhole(fd, start, Math.max(length, 0));
    } finally {
      fs.closeSync(fd);
    }
  }
  return new FileStream(fd, start, end);
}

/**
 * The parts of a `multipart/byteranges` answer (`ranges.js`'s
 * `multipartByteranges`), each part's head then its slice of the file, and
 * the closing delimiter; the descriptor closed at the end or when the
 * answer is dropped.
 *
 * @param {number} fd
 * @param {{parts: {head: Buffer, start: number, end: number}[], tail: Buffer}} multipart
 * @returns {Readable}
 */
function multipartBody(fd, { parts, tail }) {
  return Readable.from(multipartPieces(fd, parts, tail), { objectMode: false });
}

/**
 * `multipartBody` of a file's bytes held in memory: the whole answer, one buffer.
 *
 * @param {Buffer} bytes all of the file
 * @param {{parts: {head: Buffer, start: number, end: number}[], tail: Buffer}} multipart
 * @returns {Buffer}
 */
function multipartFromBytes(bytes, { parts, tail }) {
  const pieces = [];
  for (const part of parts) pieces.push(part.head, bytes.subarray(part.start, part.end + 1));
  pieces.push(tail);
  return Buffer.concat(pieces);
}

module.exports = { fileBody, multipartBody, multipartFromBytes, WHOLE_LIMIT };

// The bytes `start` to `end` of an open file, a piece per _read; the descriptor closed when it ends or is destroyed.
class FileStream extends Readable {
  constructor(fd, start, end) {
    super({ highWaterMark: READ_SIZE });
    this.fd = fd;
    this.position = start;
    this.end = end;
  }

  _read() {
    const want = Math.min(READ_SIZE, this.end - this.position + 1);
    if (want <= 0) {
      this.push(null);
      return;
    }
    const buffer = Buffer.allocUnsafe(want);
    let n;
    try {
      n = fs.readSync(this.fd, buffer, 0, want, this.position);
    } catch (err) {
      this.destroy(err);
      return;
    }
    // A file that shrank since its stat: the answer ends short.
    if (n === 0) {
      this.push(null);
      return;
    }
    this.position += n;
    this.push(n === want ? buffer : buffer.subarray(0, n));
  }

  // As fs.ReadStream: an error closing is the stream's error, unless it has one already.
  _destroy(err, callback) {
    const fd = this.fd;
    this.fd = -1;
    try {
      if (fd !== -1) fs.closeSync(fd);
    } catch (closeErr) {
      callback(err || closeErr);
      return;
    }
    callback(err);
  }
}

function readWhole(fd, start, length) {
  const buffer = Buffer.allocUnsafe(length);
  let read = 0;
  while (read < length) {
    const n = fs.readSync(fd, buffer, read, length - read, start + read);
    // A file that shrank since its stat: what is left of it, and the answer ends short.
    if (n === 0) return buffer.subarray(0, read);
    read += n;
  }
  return buffer;
}

async function* multipartPieces(fd, parts, tail) {
  try {
    for (const part of parts) {
      yield part.head;
      for (let at = part.start; at <= part.end;) {
        const size = Math.min(READ_SIZE, part.end - at + 1);
        const { bytesRead, buffer } = await readAt(fd, Buffer.allocUnsafe(size), at);
        if (bytesRead === 0) return;
        yield bytesRead === size ? buffer : buffer.subarray(0, bytesRead);
        at += bytesRead;
      }
    }
    yield tail;
  } finally {
    fs.close(fd, () => {});
  }
}

function readAt(fd, buffer, position) {
  return new Promise((resolve, reject) => {
    fs.read(fd, buffer, 0, buffer.length, position, (err, bytesRead) => (err ? reject(err) : resolve({ bytesRead, buffer })));
  });
}
