// TLC override of the module TraceValues (conformance/traces/TraceValues.tla): Read(path) is the
// value written in the file `path`, in the TLA+ value syntax that leaseproof renders traces in
// (conformance/traces/to_tla.py). TLC's parser takes seconds on a batch's megabytes of trace
// literal (SANY, then its semantic pass, then the evaluation of the literal); this reads the
// same text into the same values in milliseconds. It is the equivalent, for TLC 2.15, of the
// ndJsonDeserialize of later TLC's community modules.
//
// The syntax, and nothing else (anything else stops the run with the offset where it failed):
//   value  := tuple | record | fcn | string | int | TRUE | FALSE | Nil
//   tuple  := "<<" [value ("," value)*] ">>"
//   record := "[" field "|->" value ("," field "|->" value)* "]"     field: [a-z][A-Za-z0-9_]*
//   fcn    := "(" string ":>" value ("@@" string ":>" value)* ")"
//   string := '"' chars '"', with \\ and \" the only escapes (as SANY reads them)
//   int    := ["-"] digits, a 32-bit integer above -2^31 (which has no TLA+ literal)
// Nil is the model value Nil (the trace specs' CONSTANT Nil, a model value in every cfg).

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

import tlc2.value.impl.BoolValue;
import tlc2.value.impl.FcnRcdValue;
import tlc2.value.impl.IntValue;
import tlc2.value.impl.ModelValue;
import tlc2.value.impl.RecordValue;
import tlc2.value.impl.StringValue;
import tlc2.value.impl.TupleValue;
import tlc2.value.impl.Value;
import util.UniqueString;

public final class TraceValues {
    private static final int MAX_DEPTH = 200;

    private final String text;
    private int pos;

    private TraceValues(String text) {
        this.text = text;
    }

    /** The value in the file `path` (a TLA+ string, relative to TLC's working directory). */
    public static Value Read(Value path) {
        if (!(path instanceof StringValue)) {
            throw new IllegalArgumentException("TraceValues!Read takes a file name, not " + path);
        }
        String name = ((StringValue) path).getVal().toString();
        String text;
        try {
            text = new String(Files.readAllBytes(Paths.get(name)), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalArgumentException("TraceValues!Read cannot read " + name + ": " + e);
        }
        TraceValues reader = new TraceValues(text);
        Value v = reader.value(0);
        reader.space();
        if (reader.pos != text.length()) {
            throw reader.error("end of file");
        }
        return v;
    }

    private IllegalArgumentException error(String expected) {
        int end = Math.min(text.length(), pos + 40);
        return new IllegalArgumentException("TraceValues!Read: expected " + expected + " at offset " + pos
                + ", found \"" + text.substring(pos, end) + "\"");
    }

    private void space() {
        while (pos < text.length() && Character.isWhitespace(text.charAt(pos))) {
            pos++;
        }
    }

    private boolean eat(String token) {
        space();
        if (text.startsWith(token, pos)) {
            pos += token.length();
            return true;
        }
        return false;
    }

    /** `token` as a whole word (not the start of a longer name). */
    private boolean word(String token) {
        int end = pos + token.length();
        if (text.startsWith(token, pos) && (end == text.length() || !Character.isLetterOrDigit(text.charAt(end)))) {
            pos = end;
            return true;
        }
        return false;
    }

    private void expect(String token) {
        if (!eat(token)) {
            throw error("\"" + token + "\"");
        }
    }

    private Value value(int depth) {
        if (depth > MAX_DEPTH) {
            throw error("a value nested less than " + MAX_DEPTH + " deep");
        }
        space();
        if (eat("<<")) {
            List<Value> elems = new ArrayList<>();
            if (!eat(">>")) {
                do {
                    elems.add(value(depth + 1));
                } while (eat(","));
                expect(">>");
            }
            return new TupleValue(elems.toArray(new Value[0]));
        }
        if (eat("[")) {
            List<UniqueString> names = new ArrayList<>();
            List<Value> vals = new ArrayList<>();
            do {
                names.add(UniqueString.uniqueStringOf(field()));
                expect("|->");
                vals.add(value(depth + 1));
            } while (eat(","));
            expect("]");
            return new RecordValue(names.toArray(new UniqueString[0]), vals.toArray(new Value[0]), false);
        }
        if (eat("(")) {
            List<Value> keys = new ArrayList<>();
            List<Value> vals = new ArrayList<>();
            do {
                space();
                keys.add(new StringValue(string()));
                expect(":>");
                vals.add(value(depth + 1));
            } while (eat("@@"));
            expect(")");
            return new FcnRcdValue(keys.toArray(new Value[0]), vals.toArray(new Value[0]), false).normalize();
        }
        if (pos < text.length() && text.charAt(pos) == '"') {
            return new StringValue(string());
        }
        if (word("TRUE")) {
            return BoolValue.ValTrue;
        }
        if (word("FALSE")) {
            return BoolValue.ValFalse;
        }
        if (word("Nil")) {
            return ModelValue.make("Nil");
        }
        return IntValue.gen(integer());
    }

    private String field() {
        space();
        int start = pos;
        if (pos < text.length() && text.charAt(pos) >= 'a' && text.charAt(pos) <= 'z') {
            pos++;
            while (pos < text.length() && (Character.isLetterOrDigit(text.charAt(pos)) || text.charAt(pos) == '_')
                    && text.charAt(pos) < 128) {
                pos++;
            }
            return text.substring(start, pos);
        }
        throw error("a record field");
    }

    private String string() {
        if (pos >= text.length() || text.charAt(pos) != '"') {
            throw error("a string");
        }
        pos++;
        StringBuilder out = new StringBuilder();
        while (pos < text.length()) {
            char c = text.charAt(pos++);
            if (c == '"') {
                return out.toString();
            }
            if (c == '\\') {
                char next = pos < text.length() ? text.charAt(pos) : ' ';
                if (next != '\\' && next != '"') {
                    pos--;
                    throw error("\\\\ or \\\" after a backslash in a string");
                }
                out.append(next);
                pos++;
            } else {
                out.append(c);
            }
        }
        throw error("the end of a string");
    }

    private int integer() {
        space();
        int start = pos;
        if (pos < text.length() && text.charAt(pos) == '-') {
            pos++;
        }
        int digits = pos;
        while (pos < text.length() && text.charAt(pos) >= '0' && text.charAt(pos) <= '9') {
            pos++;
        }
        if (pos == digits) {
            pos = start;
            throw error("a value");
        }
        try {
            int n = Integer.parseInt(text.substring(start, pos));
            // As SANY: "-2147483648" is the negation of a number past TLC's integers.
            if (n == Integer.MIN_VALUE) {
                throw new NumberFormatException();
            }
            return n;
        } catch (NumberFormatException e) {
            pos = start;
            throw error("an integer of TLC's (32 bits, above -2^31)");
        }
    }
}
