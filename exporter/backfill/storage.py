"""Where the inputs are and the output goes: any file system Hadoop has a client for (`file://`,
`hdfs://`, `s3a://`, ... on the Spark JVM's class path), through Hadoop's FileSystem API in the
driver's JVM. A path without a scheme is a path of the default file system (Hadoop's
`fs.defaultFS`: the local one unless the cluster's configuration names another).

Only the driver calls this (listing, checks, renames, the manifest); executors read the inputs
through Spark (`binaryFiles`) and write the output through Spark's writers, never with Python's
`open()`, so no file system needs to be mounted on the workers.

Java's exceptions come back as Python's: FileNotFoundError, PermissionError, NoFileSystem (a
scheme without a client), OSError.
"""
from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")

# Hadoop's input formats skip names starting with these (`_SUCCESS`, `.crc` files); so does the listing.
HIDDEN = ("_", ".")


class NoFileSystem(ValueError):
    """A URI whose scheme has no file system client on the Spark JVM's class path."""


@dataclass(frozen=True)
class Listed:
    """A file found under an input: `uri`, Hadoop's qualified name for it (what Spark's readers
    call it); `name`, how the user named it (the input as given, and the path under it)."""

    uri: str
    name: str
    mtime_ms: int
    size: int


_ERRORS = {
    "java.io.FileNotFoundException": FileNotFoundError,
    "org.apache.hadoop.security.AccessControlException": PermissionError,
    "org.apache.hadoop.fs.UnsupportedFileSystemException": NoFileSystem,  # a scheme Hadoop does not know
    "java.lang.ClassNotFoundException": NoFileSystem,  # one it knows, whose client is not there (s3a://)
    "java.lang.IllegalArgumentException": ValueError,
}


@contextlib.contextmanager
def java_errors(what: str) -> Iterator[None]:
    """Py4J's wrapped Java exception -> the Python exception above, its message prefixed by `what`."""
    from py4j.protocol import Py4JJavaError

    try:
        yield
    except Py4JJavaError as e:
        chain, je = [], e.java_exception
        while je is not None and len(chain) < 5:  # the exception and its causes
            chain.append(je)
            je = je.getCause()
        for je in chain:
            cls = next((c for n, c in _ERRORS.items() if _is_a(je, n)), None)
            if cls is not None:
                break
        else:
            je, cls = chain[0], OSError
        message = str(je.getMessage() or je.getClass().getName()).splitlines()[0]
        raise cls(f"{what}: {message}") from None


def _is_a(je, class_name: str) -> bool:
    cls = je.getClass()
    while cls is not None:
        if cls.getName() == class_name:
            return True
        cls = cls.getSuperclass()
    return False


def glob_escaped(uri: str) -> str:
    """`uri` as a Hadoop input path that matches only itself: its glob characters escaped."""
    return re.sub(r"([\\\[\]{}*?])", r"\\\1", uri)


def unreadable_name(uri: str) -> str | None:
    """Why Hadoop's input formats cannot be given this file by name, or None: they skip hidden
    names, and take a list of paths separated by commas (outside braces), so a comma or an
    unmatched brace would cut it."""
    if uri.rstrip("/").rsplit("/", 1)[-1].startswith(HIDDEN):
        return "its name starts with . or _, which Hadoop's input formats skip as hidden"
    if "," in uri:
        return "its name holds a comma, which Hadoop's input formats take for a list of paths"
    depth = 0
    for c in uri:
        depth += (c == "{") - (c == "}")
        if depth < 0:
            break
    if depth:
        return "its name holds an unmatched brace, which Hadoop's input formats take for a pattern"
    return None


def read_files(sc, files: dict[str, T], partitions: int, rows_of: Callable[[T, bytes], Iterable]):
    """The rows of every file, read on the executors through Spark (`binaryFiles`: any Hadoop
    file system, each file's bytes whole): `files` maps each file's URI (as Storage.files names it)
    to what `rows_of` needs of it besides its bytes, sent to the executors once (a broadcast)."""
    known = sc.broadcast(files)
    paths = ",".join(glob_escaped(uri) for uri in files)
    return sc.binaryFiles(paths, partitions).flatMap(lambda f: rows_of(known.value[f[0]], f[1]))


class Storage:
    """The Hadoop file systems of a running SparkContext (its Hadoop configuration: `--conf
    spark.hadoop.*` and the cluster's files)."""

    def __init__(self, sc):
        self.jvm, self.gateway = sc._jvm, sc._gateway
        self.conf = sc._jsc.hadoopConfiguration()

    def _path(self, uri: str):
        with java_errors(uri):
            return self.jvm.org.apache.hadoop.fs.Path(uri)

    def _fs(self, path):
        """The path's file system; for the local one its raw self, without Hadoop's checksum files
        (a hidden `.NAME.crc` beside each file written or renamed): a local output holds the files
        its manifest lists, and nothing else."""
        from py4j.java_gateway import is_instance_of

        with java_errors(str(path.toString())):
            fs = path.getFileSystem(self.conf)
            if is_instance_of(self.gateway, fs, "org.apache.hadoop.fs.ChecksumFileSystem"):
                fs = fs.getRawFileSystem()
            return fs

    def qualified(self, given: str) -> str:
        """`given` as a full URI (scheme, authority, absolute path), without a trailing slash."""
        path = self._path(given)
        with java_errors(given):
            return str(self._fs(path).makeQualified(path).toString())

    def scheme(self, given: str) -> str:
        return self.qualified(given).split(":", 1)[0]

    def is_local(self, given: str) -> bool:
        return self.scheme(given) == "file"

    def local_path(self, uri: str) -> str:
        """The path of a `file:` URI on this machine."""
        return str(self._path(uri).toUri().getPath())

    def status(self, uri: str):
        """Hadoop's FileStatus; FileNotFoundError when nothing is there."""
        path = self._path(uri)
        fs = self._fs(path)
        with java_errors(uri):
            return fs.getFileStatus(path)

    def exists(self, uri: str) -> bool:
        path = self._path(uri)
        fs = self._fs(path)
        with java_errors(uri):
            return bool(fs.exists(path))

    def is_dir(self, uri: str) -> bool:
        try:
            return bool(self.status(uri).isDirectory())
        except FileNotFoundError:
            return False

    def names(self, uri: str) -> list[str]:
        """The names in directory `uri`, sorted."""
        path = self._path(uri)
        fs = self._fs(path)
        with java_errors(uri):
            return sorted(str(s.getPath().getName()) for s in fs.listStatus(path))

    def files(self, given: str) -> list[Listed]:
        """Every file under `given` (a file, or a directory walked), without hidden ones (names
        starting with `.` or `_`, which Hadoop's input formats skip), sorted by URI."""
        root = self.status(given)
        if not root.isDirectory():
            return [Listed(str(root.getPath().toString()), given, int(root.getModificationTime()), int(root.getLen()))]
        top = str(root.getPath().toString()).rstrip("/")
        out = []
        todo = [root.getPath()]
        fs = self._fs(root.getPath())
        while todo:
            directory = todo.pop()
            with java_errors(str(directory.toString())):
                children = fs.listStatus(directory)
            for s in children:
                if str(s.getPath().getName()).startswith(HIDDEN):
                    continue
                if s.isDirectory():
                    todo.append(s.getPath())
                else:
                    uri = str(s.getPath().toString())
                    out.append(Listed(uri, given.rstrip("/") + uri[len(top):], int(s.getModificationTime()),
                                      int(s.getLen())))
        return sorted(out, key=lambda f: f.uri)

    def head(self, uri: str, limit: int = 1 << 16) -> bytes:
        """Up to `limit` bytes from the start of file `uri`, up to and including its first newline;
        PermissionError, FileNotFoundError or OSError when it cannot be read."""
        path = self._path(uri)
        fs = self._fs(path)
        with java_errors(uri):
            stream = fs.open(path)
            try:
                data = bytes(stream.readNBytes(limit))
            finally:
                stream.close()
        return data[:data.index(b"\n") + 1] if b"\n" in data else data

    def mkdirs(self, uri: str) -> None:
        path = self._path(uri)
        fs = self._fs(path)
        with java_errors(uri):
            if not fs.mkdirs(path):
                raise OSError(f"{uri}: could not create the directory")

    def rename(self, source: str, target: str) -> None:
        """Rename `source` to `target`, which must not exist (Hadoop would move it inside)."""
        src, dst = self._path(source), self._path(target)
        fs = self._fs(src)
        with java_errors(f"{source} -> {target}"):
            if not fs.rename(src, dst):
                raise OSError(f"could not rename {source} to {target}")

    def delete(self, uri: str) -> None:
        """Remove `uri` and everything under it (nothing there: nothing done)."""
        path = self._path(uri)
        fs = self._fs(path)
        with java_errors(uri):
            fs.delete(path, True)

    def write(self, uri: str, data: bytes) -> None:
        path = self._path(uri)
        fs = self._fs(path)
        with java_errors(uri):
            out = fs.create(path, True)
            try:
                out.write(bytearray(data))
            finally:
                out.close()

    def read(self, uri: str) -> bytes:
        path = self._path(uri)
        fs = self._fs(path)
        with java_errors(uri):
            stream = fs.open(path)
            try:
                return bytes(stream.readAllBytes())
            finally:
                stream.close()

    def size(self, uri: str) -> int:
        return int(self.status(uri).getLen())

    def files_under(self, uri: str) -> list[tuple[str, int]]:
        """(URI, bytes) of every file under `uri`, walked now: a directory is listed when the walk
        reaches it, so a file moving between two directories meanwhile may be met twice or not at all."""
        path = self._path(uri)
        fs = self._fs(path)
        found = []
        try:
            with java_errors(uri):
                files = fs.listFiles(path, True)
                while files.hasNext():
                    status = files.next()
                    found.append((str(status.getPath().toString()), int(status.getLen())))
        except OSError:
            pass
        return found

    def copy_to_local(self, uri: str, local: str) -> None:
        src = self._path(uri)
        fs = self._fs(src)
        with java_errors(uri):
            fs.copyToLocalFile(False, src, self.jvm.org.apache.hadoop.fs.Path(local), True)
