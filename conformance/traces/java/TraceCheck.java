// TLC override of the printing operators of the module TraceCheck (tla/TraceCheck.tla): the same
// lines, printed without TLC's PrintT, which copies and normalises the value and runs its pretty
// printer on every line. A trace batch prints one line per line explained and one record per
// field that disagrees on a branch that dies; on the bench sample's batches, this cut their search
// by 5 to 10 % (the best of ten runs each). Consumed stays TLA+ (it calls these two).
//
// What each prints, as PrintT would (one line each; a DIFF record may be on one line where the
// pretty printer would have broken it, which the checker's reader takes alike):
//   Explained(t, n)      <<"L", t, n>>
//   Accept(t)            <<"ACCEPT", t>>
//   AcceptExcused(t, s)  <<"ACCEPT", t, {j, ...}>>  (s a set of line numbers, in order)
//   Match(t, n, pairs)   <<"DIFF", t, n, [f |-> pairs[f] : the fields f whose pair differs]>>
// Equality is TLC's own (Value.equals), with its errors for values it cannot compare.

import java.util.Arrays;
import tlc2.value.impl.BoolValue;
import tlc2.value.impl.Enumerable;
import tlc2.value.impl.IntValue;
import tlc2.value.impl.FcnRcdValue;
import tlc2.value.impl.StringValue;
import tlc2.value.impl.TupleValue;
import tlc2.value.impl.Value;
import tlc2.value.impl.ValueEnumeration;
import util.ToolIO;

public final class TraceCheck {
    private static final StringValue DIFF = new StringValue("DIFF");

    private TraceCheck() {
    }

    /** Lines 1..n of trace t are explained. Always TRUE. */
    public static Value Explained(Value t, Value n) {
        ToolIO.out.println("<<\"L\", " + number(t) + ", " + number(n) + ">>");
        return BoolValue.ValTrue;
    }

    /** Trace t is explained to its end. Always TRUE. */
    public static Value Accept(Value t) {
        ToolIO.out.println("<<\"ACCEPT\", " + number(t) + ">>");
        return BoolValue.ValTrue;
    }

    /** Trace t is explained to its end, by a behaviour that used the fault lines `used`. Always TRUE. */
    public static Value AcceptExcused(Value t, Value used) {
        if (!(used instanceof Enumerable)) {
            throw new IllegalArgumentException("TraceCheck!AcceptExcused takes a set of line numbers, not " + used);
        }
        int[] lines = new int[((Enumerable) used).size()];
        ValueEnumeration each = ((Enumerable) used).elements();
        int i = 0;
        for (Value v = each.nextElement(); v != null; v = each.nextElement()) {
            lines[i++] = Integer.parseInt(number(v));
        }
        Arrays.sort(lines);
        StringBuilder text = new StringBuilder("<<\"ACCEPT\", " + number(t) + ", {");
        for (int j = 0; j < lines.length; j++) {
            text.append(j == 0 ? "" : ", ").append(lines[j]);
        }
        ToolIO.out.println(text.append("}>>").toString());
        return BoolValue.ValTrue;
    }

    /**
     * TRUE when every field of `pairs` (a record, or a function from strings, of <<spec, logged>>
     * pairs) holds two equal values; else prints the fields that differ and is FALSE.
     */
    public static Value Match(Value t, Value n, Value pairs) {
        Value asFunction = pairs.toFcnRcd();
        if (!(asFunction instanceof FcnRcdValue)) {
            throw new IllegalArgumentException("TraceCheck!Match takes a record of pairs, not " + pairs);
        }
        FcnRcdValue fields = (FcnRcdValue) asFunction;
        Value[] names = fields.getDomainAsValues();
        int bad = 0;
        boolean[] differs = new boolean[names.length];
        for (int i = 0; i < names.length; i++) {
            Value pair = fields.values[i].toTuple();
            if (!(pair instanceof TupleValue) || ((TupleValue) pair).elems.length != 2) {
                throw new IllegalArgumentException("TraceCheck!Match: field " + names[i]
                        + " is not a pair <<spec, logged>>: " + fields.values[i]);
            }
            Value[] both = ((TupleValue) pair).elems;
            if (!both[0].equals(both[1])) {
                differs[i] = true;
                bad++;
            }
        }
        if (bad == 0) {
            return BoolValue.ValTrue;
        }
        // [f \in bad |-> pairs[f]], as TLC builds it: a function from the names that differ
        // (printed as a record where they are all identifiers, as with PrintT).
        Value[] badNames = new Value[bad];
        Value[] badPairs = new Value[bad];
        for (int i = 0, j = 0; i < names.length; i++) {
            if (differs[i]) {
                badNames[j] = names[i];
                badPairs[j++] = fields.values[i];
            }
        }
        Value line = new TupleValue(new Value[] {DIFF, t, n, new FcnRcdValue(badNames, badPairs, false)});
        line.deepNormalize();
        ToolIO.out.println(line.toString());
        return BoolValue.ValFalse;
    }

    private static String number(Value v) {
        if (v instanceof IntValue) {
            return Integer.toString(((IntValue) v).val);
        }
        throw new IllegalArgumentException("TraceCheck: a trace or line number is an integer, not " + v);
    }
}
