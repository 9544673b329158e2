// An in-memory file system with the callback API of Node's fs module, the
// one Go's os package calls under GOOS=js (syscall/fs_js.go). The static
// site installs it as globalThis.fs before the engine starts, so the fs
// backend's checkpoint directory (Flink's FileSystemCheckpointStorage) and
// every session directory live in the page's memory: nothing reaches the
// visitor's disk, and a reload starts afresh.
//
// A classic script (no import/export), so that the site loads it before
// wasm_exec.js and Node can load it for the GOOS=js test runs.
(() => {
  'use strict';

  const S_IFDIR = 0o040000;
  const S_IFREG = 0o100000;
  const constants = { O_RDONLY: 0, O_WRONLY: 1, O_RDWR: 2, O_CREAT: 64, O_EXCL: 128, O_TRUNC: 512, O_APPEND: 1024, O_DIRECTORY: 65536 };

  function fsError(code, syscall, p) {
    const e = new Error(`${code}: ${syscall} ${p ?? ''}`);
    e.code = code;
    return e;
  }

  // createMemFS returns a fresh file system holding / and /tmp. output, if
  // given, receives what Go writes to standard output and error (fd, bytes);
  // by default lines go to the console. Relative paths start at cwd.
  function createMemFS(output, cwd = '/') {
    let inoNext = 1;
    const now = () => Date.now();
    const newDir = (mode) => ({ dir: true, mode: S_IFDIR | (mode & 0o777), children: new Map(), ino: inoNext++, nlink: 1, mtime: now() });
    const newFile = (mode) => ({ dir: false, mode: S_IFREG | (mode & 0o777), data: new Uint8Array(0), size: 0, ino: inoNext++, nlink: 1, mtime: now() });
    const root = newDir(0o755);
    root.children.set('tmp', newDir(0o777));
    const fds = new Map();
    let fdNext = 3;
    const decoder = new TextDecoder('utf-8');
    const out = { 1: '', 2: '' };

    // parts splits an absolute or root-relative path into its names.
    function parts(p) {
      const out = [];
      p = String(p);
      if (!p.startsWith('/')) p = cwd + '/' + p;
      for (const n of p.split('/')) {
        if (n === '' || n === '.') continue;
        if (n === '..') out.pop(); else out.push(n);
      }
      return out;
    }
    function lookup(p, syscall) {
      let node = root;
      for (const n of parts(p)) {
        if (!node.dir) throw fsError('ENOTDIR', syscall, p);
        node = node.children.get(n);
        if (!node) throw fsError('ENOENT', syscall, p);
      }
      return node;
    }
    // parent returns the directory that holds p and p's last name.
    function parent(p, syscall) {
      const ps = parts(p);
      if (ps.length === 0) throw fsError('EBUSY', syscall, p);
      const name = ps.pop();
      const dir = lookup('/' + ps.join('/'), syscall);
      if (!dir.dir) throw fsError('ENOTDIR', syscall, p);
      return [dir, name];
    }
    function stat(node) {
      return {
        dev: 1, ino: node.ino, mode: node.mode, nlink: node.nlink, uid: 0, gid: 0, rdev: 0,
        size: node.dir ? 4096 : node.size, blksize: 4096, blocks: node.dir ? 8 : Math.ceil(node.size / 512),
        atimeMs: node.mtime, mtimeMs: node.mtime, ctimeMs: node.mtime,
        isDirectory() { return node.dir; }, isFile() { return !node.dir; }, isSymbolicLink() { return false; },
      };
    }
    function fdOf(fd, syscall) {
      const f = fds.get(fd);
      if (!f) throw fsError('EBADF', syscall, fd);
      return f;
    }
    function grow(node, size) {
      if (size <= node.data.length) return;
      const next = new Uint8Array(Math.max(size, node.data.length * 2, 256));
      next.set(node.data.subarray(0, node.size));
      node.data = next;
    }
    function writeTo(node, buf, offset, length, position) {
      const end = position + length;
      grow(node, end);
      if (position > node.size) node.data.fill(0, node.size, position);
      node.data.set(buf.subarray(offset, offset + length), position);
      node.size = Math.max(node.size, end);
      node.mtime = now();
      return length;
    }
    function toConsole(fd, buf) {
      if (output) return output(fd, buf);
      out[fd] += decoder.decode(buf);
      const nl = out[fd].lastIndexOf('\n');
      if (nl !== -1) {
        (fd === 2 ? globalThis.console.warn : globalThis.console.log)(out[fd].substring(0, nl));
        out[fd] = out[fd].substring(nl + 1);
      }
      return buf.length;
    }
    // call runs op and hands its result to Node's callback convention.
    function call(cb, op) {
      let r;
      try { r = op(); } catch (e) { if (!e.code) throw e; cb(e); return; }
      cb(null, r);
    }

    const fs = {
      constants,
      writeSync(fd, buf) {
        if (fd === 1 || fd === 2) return toConsole(fd, buf);
        const f = fdOf(fd, 'write');
        const n = writeTo(f.node, buf, 0, buf.length, f.append ? f.node.size : f.pos);
        f.pos += n;
        return n;
      },
      open(p, flags, mode, cb) {
        call(cb, () => {
          let node;
          try { node = lookup(p, 'open'); } catch (e) { if (e.code !== 'ENOENT') throw e; }
          if (node && (flags & constants.O_CREAT) && (flags & constants.O_EXCL)) throw fsError('EEXIST', 'open', p);
          if (!node) {
            if (!(flags & constants.O_CREAT)) throw fsError('ENOENT', 'open', p);
            const [dir, name] = parent(p, 'open');
            node = newFile(mode ?? 0o666);
            dir.children.set(name, node);
            dir.mtime = now();
          }
          const writing = (flags & (constants.O_WRONLY | constants.O_RDWR)) !== 0;
          if (node.dir && writing) throw fsError('EISDIR', 'open', p);
          if ((flags & constants.O_DIRECTORY) && !node.dir) throw fsError('ENOTDIR', 'open', p);
          if ((flags & constants.O_TRUNC) && writing) { node.size = 0; node.mtime = now(); }
          const fd = fdNext++;
          fds.set(fd, { node, pos: 0, append: (flags & constants.O_APPEND) !== 0 });
          return fd;
        });
      },
      close(fd, cb) { call(cb, () => { fdOf(fd, 'close'); fds.delete(fd); }); },
      read(fd, buffer, offset, length, position, cb) {
        call(cb, () => {
          const f = fdOf(fd, 'read');
          if (f.node.dir) throw fsError('EISDIR', 'read', fd);
          const pos = position ?? f.pos;
          const n = Math.max(0, Math.min(length, f.node.size - pos));
          buffer.set(f.node.data.subarray(pos, pos + n), offset);
          if (position === null || position === undefined) f.pos += n;
          return n;
        });
      },
      write(fd, buf, offset, length, position, cb) {
        call(cb, () => {
          if (fd === 1 || fd === 2) return toConsole(fd, buf.subarray(offset, offset + length));
          const f = fdOf(fd, 'write');
          const pos = position ?? (f.append ? f.node.size : f.pos);
          const n = writeTo(f.node, buf, offset, length, pos);
          if (position === null || position === undefined) f.pos = pos + n;
          return n;
        });
      },
      fstat(fd, cb) { call(cb, () => stat(fdOf(fd, 'fstat').node)); },
      stat(p, cb) { call(cb, () => stat(lookup(p, 'stat'))); },
      lstat(p, cb) { call(cb, () => stat(lookup(p, 'lstat'))); },
      fsync(fd, cb) { call(cb, () => { fdOf(fd, 'fsync'); }); },
      ftruncate(fd, length, cb) { call(cb, () => { const n = fdOf(fd, 'ftruncate').node; grow(n, length); if (length > n.size) n.data.fill(0, n.size, length); n.size = length; }); },
      truncate(p, length, cb) { call(cb, () => { const n = lookup(p, 'truncate'); if (n.dir) throw fsError('EISDIR', 'truncate', p); grow(n, length); if (length > n.size) n.data.fill(0, n.size, length); n.size = length; }); },
      mkdir(p, mode, cb) {
        call(cb, () => {
          const [dir, name] = parent(p, 'mkdir');
          if (dir.children.has(name)) throw fsError('EEXIST', 'mkdir', p);
          dir.children.set(name, newDir(mode ?? 0o777));
          dir.mtime = now();
        });
      },
      readdir(p, cb) {
        call(cb, () => {
          const n = lookup(p, 'readdir');
          if (!n.dir) throw fsError('ENOTDIR', 'readdir', p);
          return [...n.children.keys()].sort();
        });
      },
      rmdir(p, cb) {
        call(cb, () => {
          const [dir, name] = parent(p, 'rmdir');
          const n = dir.children.get(name);
          if (!n) throw fsError('ENOENT', 'rmdir', p);
          if (!n.dir) throw fsError('ENOTDIR', 'rmdir', p);
          if (n.children.size > 0) throw fsError('ENOTEMPTY', 'rmdir', p);
          dir.children.delete(name);
          dir.mtime = now();
        });
      },
      unlink(p, cb) {
        call(cb, () => {
          const [dir, name] = parent(p, 'unlink');
          const n = dir.children.get(name);
          if (!n) throw fsError('ENOENT', 'unlink', p);
          if (n.dir) throw fsError('EISDIR', 'unlink', p);
          dir.children.delete(name);
          n.nlink--;
          dir.mtime = now();
        });
      },
      rename(from, to, cb) {
        call(cb, () => {
          const [fd, fname] = parent(from, 'rename');
          const n = fd.children.get(fname);
          if (!n) throw fsError('ENOENT', 'rename', from);
          const [td, tname] = parent(to, 'rename');
          const old = td.children.get(tname);
          if (old === n) return;
          if (old) {
            if (old.dir && !n.dir) throw fsError('EISDIR', 'rename', to);
            if (!old.dir && n.dir) throw fsError('ENOTDIR', 'rename', to);
            if (old.dir && old.children.size > 0) throw fsError('ENOTEMPTY', 'rename', to);
          }
          if (n.dir) {
            // A directory cannot move into itself.
            const fp = parts(from).join('/') + '/';
            if ((parts(to).join('/') + '/').startsWith(fp)) throw fsError('EINVAL', 'rename', to);
          }
          fd.children.delete(fname);
          td.children.set(tname, n);
          fd.mtime = td.mtime = now();
        });
      },
      link(from, to, cb) {
        call(cb, () => {
          const n = lookup(from, 'link');
          if (n.dir) throw fsError('EPERM', 'link', from);
          const [td, tname] = parent(to, 'link');
          if (td.children.has(tname)) throw fsError('EEXIST', 'link', to);
          td.children.set(tname, n);
          n.nlink++;
        });
      },
      symlink(from, to, cb) { cb(fsError('ENOSYS', 'symlink', to)); },
      readlink(p, cb) { call(cb, () => { lookup(p, 'readlink'); throw fsError('EINVAL', 'readlink', p); }); },
      chmod(p, mode, cb) { call(cb, () => { const n = lookup(p, 'chmod'); n.mode = (n.mode & ~0o777) | (mode & 0o777); }); },
      fchmod(fd, mode, cb) { call(cb, () => { const n = fdOf(fd, 'fchmod').node; n.mode = (n.mode & ~0o777) | (mode & 0o777); }); },
      chown(p, uid, gid, cb) { call(cb, () => { lookup(p, 'chown'); }); },
      fchown(fd, uid, gid, cb) { call(cb, () => { fdOf(fd, 'fchown'); }); },
      lchown(p, uid, gid, cb) { call(cb, () => { lookup(p, 'lchown'); }); },
      utimes(p, atime, mtime, cb) { call(cb, () => { lookup(p, 'utimes').mtime = mtime * 1000; }); },
      // usage is what the page holds in files, for the status line and tests.
      usage() {
        let files = 0; let bytes = 0;
        const walk = (n) => { for (const c of n.children.values()) { if (c.dir) walk(c); else { files++; bytes += c.size; } } };
        walk(root);
        return { files, bytes };
      },
    };
    return fs;
  }

  globalThis.StatelabMemFS = createMemFS;
})();
