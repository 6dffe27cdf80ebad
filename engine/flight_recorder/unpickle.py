"""A restricted unpickler for Flight Recorder dumps: plain data only, and nothing of Python's pickle machinery.

It interprets the pickle opcodes itself and builds only dicts, lists, tuples, strings, bytes, ints, floats, booleans
and None. Every opcode that names a global, builds an object, calls something, takes a persistent id, an extension
code or an out-of-band buffer, and sets and bytearrays, is refused with the opcode's name and offset. The input size,
the nesting depth and the number of values (shared references counted each time they are reachable, so that a
recursive or exponentially shared structure is refused too) are bounded.
"""

import pickletools
import struct

from engine.flight_recorder.errors import DumpError, PickleRefused

MAX_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 32
MAX_VALUES = 4_000_000

_OPCODE_NAMES = {op.code.encode("latin-1")[0]: op.name for op in pickletools.opcodes}
_SCALARS = (str, int, float, bool, bytes, type(None))

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
    try:
        value = _interpret(data, name)
    except (PickleRefused, DumpError):
        raise
    except (IndexError, KeyError, struct.error) as error:
        raise DumpError(f"{name}: truncated or malformed pickle ({error})") from None
    except (ValueError, TypeError, UnicodeDecodeError, OverflowError) as error:
        raise DumpError(f"{name}: malformed pickle ({type(error).__name__}: {error})") from None
    check_plain(value, name=name, max_depth=max_depth, max_values=max_values)
    return value


def check_plain(value: object, *, name: str, max_depth: int = MAX_DEPTH, max_values: int = MAX_VALUES) -> None:
    """Refuse anything but plain data nested at most `max_depth` deep with at most `max_values` values in all."""
    pending = [(value, 0)]
    seen = 0
    while pending:
        item, depth = pending.pop()
        seen += 1
        if seen > max_values:
            raise DumpError(f"{name}: more than {max_values:,} values (recursive or shared structure?)")
        if isinstance(item, _SCALARS):
            continue
        if depth >= max_depth:
            raise DumpError(f"{name}: nested more than {max_depth} deep")
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, _SCALARS):
                    raise DumpError(f"{name}: a dict key of type {type(key).__name__}")
                pending.append((child, depth + 1))
        elif isinstance(item, list | tuple):
            pending.extend((child, depth + 1) for child in item)
        else:
            raise DumpError(f"{name}: a value of type {type(item).__name__}")


def _refuse(op: int, pos: int, name: str) -> PickleRefused:
    opcode = _OPCODE_NAMES.get(op, f"0x{op:02x}")
    return PickleRefused(
        f"{name}: refused pickle opcode {opcode} at byte {pos}: a Flight Recorder dump holds only dicts, lists, "
        "tuples, strings, bytes, numbers, booleans and None"
    )


def _line(data: bytes, pos: int) -> tuple[bytes, int]:
    end = data.index(b"\n", pos)
    return data[pos:end], end + 1


def _interpret(data: bytes, name: str) -> object:
    stack: list = []
    marks: list[list] = []
    memo: dict[int, object] = {}
    unpack_int, unpack_double = struct.Struct("<i").unpack_from, struct.Struct(">d").unpack_from
    unpack_u32, unpack_u64 = struct.Struct("<I").unpack_from, struct.Struct("<Q").unpack_from
    pos, size = 0, len(data)
    while True:
        if pos >= size:
            raise DumpError(f"{name}: truncated pickle (no STOP)")
        op = data[pos]
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
            stack.append([])
        elif op == APPENDS:
            items = stack
            stack = marks.pop()
            target = stack[-1]
            if type(target) is not list:
                raise DumpError(f"{name}: APPENDS at byte {start} onto a {type(target).__name__}")
            target.extend(items)
        elif op == EMPTY_DICT:
            stack.append({})
        elif op == SETITEMS:
            items = stack
            stack = marks.pop()
            _set_items(stack[-1], items, start, name)
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
            stack[-2:] = [(stack[-2], stack[-1])]
        elif op == TUPLE1:
            stack[-1] = (stack[-1],)
        elif op == TUPLE3:
            stack[-3:] = [(stack[-3], stack[-2], stack[-1])]
        elif op == TUPLE:
            items = tuple(stack)
            stack = marks.pop()
            stack.append(items)
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
            stack[-1].append(item)
        elif op == SETITEM:
            value = stack.pop()
            key = stack.pop()
            _set_items(stack[-1], [key, value], start, name)
        elif op == LIST:
            items = stack
            stack = marks.pop()
            stack.append(items)
        elif op == DICT:
            items = stack
            stack = marks.pop()
            stack.append({})
            _set_items(stack[-1], items, start, name)
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


def _set_items(target: object, items: list, pos: int, name: str) -> None:
    if type(target) is not dict:
        raise DumpError(f"{name}: SETITEMS at byte {pos} onto a {type(target).__name__}")
    if len(items) % 2:
        raise DumpError(f"{name}: SETITEMS at byte {pos} with an odd number of items")
    for index in range(0, len(items), 2):
        key = items[index]
        if not isinstance(key, _SCALARS):
            raise DumpError(f"{name}: a dict key of type {type(key).__name__} at byte {pos}")
        target[key] = items[index + 1]
