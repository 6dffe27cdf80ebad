"""A restricted unpickler for Flight Recorder dumps: plain data only, and no code run, ever.

The rule is that of its own opcode interpreter (`_interpret`): it builds only dicts, lists, tuples, strings, bytes,
ints, floats, booleans and None; every opcode that names a global, builds an object, calls something, takes a
persistent id, an extension code or an out-of-band buffer, and sets and bytearrays, is refused with the opcode's name
and offset; the input size, the nesting depth and the number of values (a shared container counted each time it is
reachable, so that a recursive or exponentially shared structure is refused too) are bounded.

The interpreter runs at Python speed, some twenty times slower than the standard library's. So a pickle is first
given to the standard library's C unpickler with every way to an object other than plain data closed: `find_class`
(the only way to a global, a class or a callable, hence to REDUCE, BUILD, NEWOBJ, INST and OBJ) and
`persistent_load` refuse, and it is not used at all while copyreg's extension registry or cache holds anything (EXT
codes would resolve there). What it returns is then checked as plain data within the same bounds. Anything it refuses
or builds that is not plain data goes to the interpreter, which gives the precise error.
"""

import copyreg
import io
import pickle
import pickletools
import struct
from gc import get_referents as _referents

from engine.flight_recorder.errors import DumpError, PickleRefused

MAX_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 32
MAX_VALUES = 4_000_000
_READ_AHEAD = 64 * 1024

_OPCODE_NAMES = {op.code.encode("latin-1")[0]: op.name for op in pickletools.opcodes}
_KEY_TYPES = frozenset((str, int, float, bool, bytes, type(None), tuple))  # a tuple key is checked like a value
_CONTAINERS = frozenset((dict, list, tuple))
_PLAIN = _CONTAINERS | _KEY_TYPES

# The opcodes understood, by their byte (pickletools.opcodes documents each).
MARK, STOP, POP, POP_MARK, DUP = 0x28, 0x2E, 0x30, 0x31, 0x32
FLOAT, INT, BININT, BININT1, LONG, BININT2, NONE = 0x46, 0x49, 0x4A, 0x4B, 0x4C, 0x4D, 0x4E
UNICODE, APPEND, DICT, EMPTY_DICT, APPENDS, GET, BINGET = 0x56, 0x61, 0x64, 0x7D, 0x65, 0x67, 0x68
LONG_BINGET, LIST, EMPTY_LIST, PUT, BINPUT, LONG_BINPUT = 0x6A, 0x6C, 0x5D, 0x70, 0x71, 0x72
SETITEM, TUPLE, EMPTY_TUPLE, SETITEMS, BINFLOAT, BINUNICODE = 0x73, 0x74, 0x29, 0x75, 0x47, 0x58
BINBYTES, SHORT_BINBYTES = 0x42, 0x43
PROTO, TUPLE1, TUPLE2, TUPLE3, NEWTRUE, NEWFALSE, LONG1, LONG4 = 0x80, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8A, 0x8B
SHORT_BINUNICODE, BINUNICODE8, BINBYTES8, MEMOIZE, FRAME = 0x8C, 0x8D, 0x8E, 0x94, 0x95
TEXT_LINE = frozenset((INT, LONG, FLOAT, UNICODE, GET, PUT))


def loads(data: bytes, *, name: str, max_depth: int = MAX_DEPTH, max_values: int = MAX_VALUES) -> object:
    """The plain data a pickle holds; `name` (the file) is named in every error."""
    if len(data) > MAX_BYTES:
        raise DumpError(f"{name}: {len(data):,} bytes, more than the {MAX_BYTES:,} a dump may have")
    if not copyreg._extension_registry and not copyreg._extension_cache:
        try:
            # a buffered reader lends the C unpickler `peek`, so that it reads ahead instead of calling read() for
            # every opcode (the dumps are protocol 2: no frames)
            value = _NoObjects(io.BufferedReader(io.BytesIO(data), _READ_AHEAD)).load()
            check_plain(value, name=name, max_depth=max_depth, max_values=max_values)
        except Exception:  # noqa: BLE001 - whatever it was, the interpreter names it
            pass
        else:
            return value
    return interpret(data, name=name, max_depth=max_depth, max_values=max_values)


class _NoObjects(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        raise PickleRefused(f"refused global {module}.{name}")

    def persistent_load(self, pid):
        raise PickleRefused("refused persistent id")


def check_plain(value: object, *, name: str, max_depth: int = MAX_DEPTH, max_values: int = MAX_VALUES) -> None:
    """Refuse anything but plain data nested at most `max_depth` deep with at most `max_values` values in all.

    A value reachable several times counts each time (so an exponentially shared structure is refused), and a
    container inside itself is nested without end. The walk goes level by level, and each level costs two passes of
    the interpreter's own C loops: `gc.get_referents` lists what a level's containers hold (a dict's values, and its
    keys too unless they are all strings: so non-string keys are checked like values), and a set of their types
    refuses anything but plain data. It stops at the first level past either bound.
    """
    plain, containers, referents = _PLAIN.issuperset, _CONTAINERS.isdisjoint, _referents
    level, depth, count = [value], 1, 1
    while True:
        kinds = set(map(type, level))
        if not plain(kinds):
            raise DumpError(f"{name}: a value of type {min(kind.__name__ for kind in kinds - _PLAIN)}")
        if containers(kinds):
            return
        if depth > max_depth:
            raise DumpError(f"{name}: nested more than {max_depth} deep")
        level = referents(*level)
        count += len(level)
        if count > max_values:
            raise DumpError(f"{name}: more than {max_values:,} values (shared structure?)")
        depth += 1


def interpret(data: bytes, *, name: str, max_depth: int = MAX_DEPTH, max_values: int = MAX_VALUES) -> object:
    """The same as `loads`, by the opcode interpreter alone."""
    if len(data) > MAX_BYTES:
        raise DumpError(f"{name}: {len(data):,} bytes, more than the {MAX_BYTES:,} a dump may have")
    try:
        return _interpret(data, name, max_depth, max_values)
    except (PickleRefused, DumpError):
        raise
    except (IndexError, KeyError, struct.error) as error:
        raise DumpError(f"{name}: truncated or malformed pickle ({error})") from None
    except (ValueError, TypeError, UnicodeDecodeError, OverflowError) as error:
        raise DumpError(f"{name}: malformed pickle ({type(error).__name__}: {error})") from None


class _Shapes:
    """The number of values and the nesting depth of every container built, kept as they are built.

    A container may be filled only until it is put into another one (picklers build children first), and never with
    itself: so no structure is recursive, and the counts of a nested container are final when its parent adds them.
    A container shared through the memo counts each time it is nested.
    """

    def __init__(self, name: str, max_depth: int, max_values: int):
        self.name, self.max_depth, self.max_values = name, max_depth, max_values
        self.shapes: dict[int, tuple[int, int]] = {}  # id -> (values, depth)
        self.sealed: set[int] = set()
        self.alive: list = []  # every container built, so that no id is reused while the pickle is read

    def new(self, container, items=(), pos: int = 0):
        self.shapes[id(container)] = (1, 1)
        self.alive.append(container)
        if items:
            self.nest(container, items, pos)
        return container

    def nest(self, target, items, pos: int) -> None:
        """Account for `items` put into `target` (a list being filled, or a new tuple or list)."""
        key = id(target)
        if key in self.sealed:
            raise DumpError(f"{self.name}: a container filled after it was nested in another (byte {pos})")
        values, depth = self.shapes[key]
        shapes, sealed = self.shapes, self.sealed
        for item in items:
            shape = shapes.get(id(item))
            if shape is None:
                values += 1
                continue
            if item is target:
                raise DumpError(f"{self.name}: a container inside itself (byte {pos})")
            values += shape[0]
            if shape[1] >= depth:
                depth = shape[1] + 1
            sealed.add(id(item))
        self._check(key, values, depth)

    def fill_dict(self, target, items: list, pos: int) -> None:
        """SETITEMS: `items` alternate keys (plain scalars) and values."""
        if type(target) is not dict:
            raise DumpError(f"{self.name}: SETITEMS at byte {pos} onto a {type(target).__name__}")
        if len(items) % 2:
            raise DumpError(f"{self.name}: SETITEMS at byte {pos} with an odd number of items")
        keys = items[0::2]
        for name in keys:
            if type(name) not in _KEY_TYPES:
                raise DumpError(f"{self.name}: a dict key of type {type(name).__name__} at byte {pos}")
        self.nest(target, items, pos)
        target.update(zip(keys, items[1::2], strict=True))

    def _check(self, key: int, values: int, depth: int) -> None:
        if values > self.max_values:
            raise DumpError(f"{self.name}: more than {self.max_values:,} values (shared structure?)")
        if depth > self.max_depth:
            raise DumpError(f"{self.name}: nested more than {self.max_depth} deep")
        self.shapes[key] = (values, depth)


def _refuse(op: int, pos: int, name: str) -> PickleRefused:
    opcode = _OPCODE_NAMES.get(op, f"0x{op:02x}")
    return PickleRefused(
        f"{name}: refused pickle opcode {opcode} at byte {pos}: a Flight Recorder dump holds only dicts, lists, "
        "tuples, strings, bytes, numbers, booleans and None"
    )


def _line(data: bytes, pos: int) -> tuple[bytes, int]:
    end = data.index(b"\n", pos)
    return data[pos:end], end + 1


def _interpret(data: bytes, name: str, max_depth: int, max_values: int) -> object:
    shapes = _Shapes(name, max_depth, max_values)
    new, nest, fill_dict = shapes.new, shapes.nest, shapes.fill_dict
    stack: list = []
    marks: list[list] = []
    memo: dict[int, object] = {}
    unpack_int, unpack_double = struct.Struct("<i").unpack_from, struct.Struct(">d").unpack_from
    unpack_u32, unpack_u64 = struct.Struct("<I").unpack_from, struct.Struct("<Q").unpack_from
    pos, size = 0, len(data)
    while True:
        op = data[pos]  # past the end: IndexError, a truncated pickle
        start = pos
        pos += 1
        if op == BINGET:
            stack.append(memo[data[pos]])
            pos += 1
        elif op == BINPUT:
            memo[data[pos]] = stack[-1]
            pos += 1
        elif op == BINUNICODE:
            (length,) = unpack_u32(data, pos)
            end = pos + 4 + length
            if end > size:
                raise DumpError(f"{name}: truncated pickle (a string runs past the end)")
            stack.append(data[pos + 4 : end].decode("utf-8", "surrogatepass"))
            pos = end
        elif op == SHORT_BINUNICODE:
            end = pos + 1 + data[pos]
            if end > size:
                raise DumpError(f"{name}: truncated pickle (a string runs past the end)")
            stack.append(data[pos + 1 : end].decode("utf-8", "surrogatepass"))
            pos = end
        elif op == MARK:
            marks.append(stack)
            stack = []
        elif op == BININT1:
            stack.append(data[pos])
            pos += 1
        elif op == EMPTY_LIST:
            stack.append(new([]))
        elif op == APPENDS:
            items = stack
            stack = marks.pop()
            target = stack[-1]
            if type(target) is not list:
                raise DumpError(f"{name}: APPENDS at byte {start} onto a {type(target).__name__}")
            nest(target, items, start)
            target.extend(items)
        elif op == EMPTY_DICT:
            stack.append(new({}))
        elif op == SETITEMS:
            items = stack
            stack = marks.pop()
            fill_dict(stack[-1], items, start)
        elif op == MEMOIZE:
            memo[len(memo)] = stack[-1]
        elif op == NONE:
            stack.append(None)
        elif op == BININT2:
            stack.append(data[pos] | data[pos + 1] << 8)
            pos += 2
        elif op == BININT:
            stack.append(unpack_int(data, pos)[0])
            pos += 4
        elif op == TUPLE2:
            stack[-2:] = [new((stack[-2], stack[-1]), stack[-2:], start)]
        elif op == TUPLE1:
            stack[-1] = new((stack[-1],), stack[-1:], start)
        elif op == TUPLE3:
            stack[-3:] = [new((stack[-3], stack[-2], stack[-1]), stack[-3:], start)]
        elif op == TUPLE:
            items = tuple(stack)
            stack = marks.pop()
            stack.append(new(items, items, start))
        elif op == EMPTY_TUPLE:
            stack.append(())
        elif op == NEWTRUE:
            stack.append(True)
        elif op == NEWFALSE:
            stack.append(False)
        elif op in (LONG1, LONG4):
            if op == LONG1:
                length, pos = data[pos], pos + 1
            else:
                (length,), pos = unpack_u32(data, pos), pos + 4
            if pos + length > size:
                raise DumpError(f"{name}: truncated pickle (an integer runs past the end)")
            stack.append(int.from_bytes(data[pos : pos + length], "little", signed=True))
            pos += length
        elif op == BINFLOAT:
            stack.append(unpack_double(data, pos)[0])
            pos += 8
        elif op == LONG_BINGET:
            stack.append(memo[unpack_u32(data, pos)[0]])
            pos += 4
        elif op == LONG_BINPUT:
            memo[unpack_u32(data, pos)[0]] = stack[-1]
            pos += 4
        elif op == APPEND:
            item = stack.pop()
            if type(stack[-1]) is not list:
                raise DumpError(f"{name}: APPEND at byte {start} onto a {type(stack[-1]).__name__}")
            nest(stack[-1], (item,), start)
            stack[-1].append(item)
        elif op == SETITEM:
            value = stack.pop()
            key = stack.pop()
            fill_dict(stack[-1], [key, value], start)
        elif op == LIST:
            items = stack
            stack = marks.pop()
            stack.append(new(items, items, start))
        elif op == DICT:
            items = stack
            stack = marks.pop()
            stack.append(new({}))
            fill_dict(stack[-1], items, start)
        elif op in (BINBYTES, SHORT_BINBYTES, BINBYTES8):
            if op == SHORT_BINBYTES:
                length, pos = data[pos], pos + 1
            elif op == BINBYTES:
                (length,), pos = unpack_u32(data, pos), pos + 4
            else:
                (length,), pos = unpack_u64(data, pos), pos + 8
            if pos + length > size:
                raise DumpError(f"{name}: truncated pickle (bytes run past the end)")
            stack.append(data[pos : pos + length])
            pos += length
        elif op == BINUNICODE8:
            (length,) = unpack_u64(data, pos)
            end = pos + 8 + length
            if end > size:
                raise DumpError(f"{name}: truncated pickle (a string runs past the end)")
            stack.append(data[pos + 8 : end].decode("utf-8", "surrogatepass"))
            pos = end
        elif op == STOP:
            if marks or len(stack) != 1:
                raise DumpError(f"{name}: malformed pickle (STOP at byte {start} with an unbalanced stack)")
            return stack[0]
        elif op == PROTO:
            if data[pos] > 5:
                raise DumpError(f"{name}: pickle protocol {data[pos]} (5 is the newest known)")
            pos += 1
        elif op == FRAME:
            pos += 8
        elif op == POP:
            if stack:
                stack.pop()
            else:
                stack = marks.pop()
        elif op == POP_MARK:
            stack = marks.pop()
        elif op == DUP:
            stack.append(stack[-1])
        elif op in TEXT_LINE:
            text, pos = _line(data, pos)
            if op == INT:
                stack.append(text == b"01" if text in (b"00", b"01") else int(text))
            elif op == LONG:
                stack.append(int(text.removesuffix(b"L")))
            elif op == FLOAT:
                stack.append(float(text))
            elif op == UNICODE:
                stack.append(text.decode("raw-unicode-escape"))
            elif op == GET:
                stack.append(memo[int(text)])
            else:
                memo[int(text)] = stack[-1]
        else:
            raise _refuse(op, start, name)
