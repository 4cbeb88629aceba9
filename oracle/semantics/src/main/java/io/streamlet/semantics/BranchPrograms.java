package io.streamlet.semantics;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import org.apache.kafka.streams.kstream.BranchedKStream;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Named;

/**
 * split / merge of the program language (tests/support/dsl_spec.py). A split is always named, so its branches'
 * names (split name + branch name or index, the default branch's index being 0) are known to both sides; each
 * branch is bound to the next id of "ids" (branches in order, then the default branch).
 */
@SuppressWarnings({"unchecked", "rawtypes"})
final class BranchPrograms {
    private BranchPrograms() {
    }

    static boolean handles(final String kind) {
        return "split".equals(kind) || "merge".equals(kind);
    }

    static void apply(final JsonNode op, final Object in, final Map<String, Object> vars) {
        final String kind = op.get("op").asText();
        if ("merge".equals(kind)) {
            final KStream other = (KStream) vars.get(op.get("other").asText());
            final Named named = Programs.named(op);
            vars.put(op.get("id").asText(), named == null ? ((KStream) in).merge(other) : ((KStream) in).merge(other, named));
            return;
        }
        final String prefix = op.get("name").asText();
        final BranchedKStream split = ((KStream) in).split(Named.as(prefix));
        final JsonNode ids = op.get("ids");
        final String[] keys = new String[ids.size()];
        int i = 0;
        for (final JsonNode branch : op.get("branches")) {
            final String fn = branch.get("fn").asText();
            final String name = branch.path("name").asText(null);
            keys[i] = prefix + (name == null ? String.valueOf(i + 1) : name);
            if (name == null) {
                split.branch((k, v) -> Programs.predicate(fn, k, v));
            } else {
                split.branch((k, v) -> Programs.predicate(fn, k, v), Branched.as(name));
            }
            i++;
        }
        final Map<String, KStream> branches;
        if (op.hasNonNull("default")) {
            final String name = op.get("default").path("name").asText(null);
            keys[i] = prefix + (name == null ? "0" : name);
            branches = name == null ? split.defaultBranch() : split.defaultBranch(Branched.as(name));
        } else {
            branches = split.noDefaultBranch();
        }
        for (int j = 0; j < keys.length; j++) {
            vars.put(ids.get(j).asText(), branches.get(keys[j]));
        }
    }
}
