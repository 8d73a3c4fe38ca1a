// `tessera import MODEL.onnx [--dim N=V ...] [--json]`: imports an ONNX model (tessera_onnx) and
// prints its graph as imported: inputs, each node with its output shapes and MACs, outputs, and
// the fusion groups the graph compiler makes of it (model_fusion_groups) with their MACs.
#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>
#include <tessera/chipsim/target.h>
#include <tessera/codegen/chip_model.h>

#include "cli_common.h"
#include "cmd_import_common.h"

namespace tessera::cli {

std::map<std::string, int64_t> parse_dims(const std::vector<std::string> &words) {
    std::map<std::string, int64_t> dims;
    for (const std::string &w : words) {
        const size_t eq = w.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == w.size())
            throw UsageError("--dim '" + w + "' is not NAME=VALUE (e.g. --dim batch=4)");
        const std::string name = w.substr(0, eq), value = w.substr(eq + 1);
        int64_t v = 0;
        size_t used = 0;
        try {
            v = std::stoll(value, &used);
        } catch (const std::exception &) {
            used = 0;
        }
        if (used != value.size() || v < 1 || v > 2147483647)
            throw UsageError("--dim " + name + " = '" + value + "' is not an integer in 1 .. 2147483647");
        if (!dims.emplace(name, v).second) throw UsageError("--dim " + name + " is given twice");
    }
    return dims;
}

bool model_target_is_chip(const Target &target, const std::string &name, const std::string &command) {
    if (target.kind() == Target::Kind::Chip) {
        chipsim::load_target(name); // an unknown name or a bad file is reported as such
        return true;
    }
    if (target.kind() != Target::Kind::Host)
        throw UsageError(command + ": target '" + target.name() + "' is not supported; use host, tsp-mini, npu-edge or a chip file");
    return false;
}

std::string shape_text(const std::vector<int64_t> &shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

namespace {

struct ImportOptions {
    std::string model;
    std::vector<std::string> dims;
    bool json = false, no_passes = false;
};

nlohmann::ordered_json tensor_json(const onnx::ModelTensor &t) {
    nlohmann::ordered_json j;
    j["name"] = t.name;
    j["dtype"] = t.type.to_string();
    j["shape"] = t.shape;
    return j;
}

/// A fusion group as reports show it: its values' labels and the MACs of their nodes.
struct GroupReport {
    std::string head;
    std::vector<std::string> values;
    int64_t macs = 0;
};

std::vector<GroupReport> group_reports(const onnx::Model &m) {
    std::map<std::string, const GraphValue *> value_of;
    for (const GraphValue &v : m.values) value_of[v.func.name()] = &v;
    std::map<std::string, int64_t> macs_of_node;
    for (const onnx::ModelNode &n : m.nodes) macs_of_node[n.label] = n.macs;
    std::vector<GroupReport> reports;
    for (const ModelFusionGroup &g : model_fusion_groups(m.pipeline, m.values)) {
        GroupReport r;
        r.head = value_of.at(g.head)->label;
        std::set<std::string> nodes; // a node with several outputs counts once
        for (const std::string &member : g.members) {
            const std::string &label = value_of.at(member)->label;
            r.values.push_back(label);
            if (nodes.insert(label).second && macs_of_node.count(label)) r.macs += macs_of_node[label];
        }
        reports.push_back(std::move(r));
    }
    return reports;
}

int run(const ImportOptions &o) {
    onnx::ImportOptions io;
    io.dims = parse_dims(o.dims);
    io.optimize = !o.no_passes;
    const onnx::Model m = onnx::import(o.model, io);
    int64_t macs = 0;
    for (const onnx::ModelNode &n : m.nodes) macs += n.macs;
    const std::vector<GroupReport> groups = group_reports(m);
    if (o.json) {
        nlohmann::ordered_json j;
        j["model"] = o.model;
        j["opset"] = m.opset;
        j["nodes_removed_by_passes"] = m.nodes_removed;
        for (const auto &t : m.inputs) j["inputs"].push_back(tensor_json(t));
        for (const auto &t : m.outputs) j["outputs"].push_back(tensor_json(t));
        j["constants"] = m.constants.size();
        j["nodes"] = nlohmann::json::array();
        for (const onnx::ModelNode &n : m.nodes) {
            nlohmann::ordered_json jn;
            jn["name"] = n.name;
            jn["op_type"] = n.op_type;
            for (const auto &t : n.outputs) jn["outputs"].push_back(tensor_json(t));
            jn["macs"] = n.macs;
            j["nodes"].push_back(jn);
        }
        j["fusion_groups"] = nlohmann::json::array();
        for (const GroupReport &g : groups) {
            nlohmann::ordered_json jg;
            jg["head"] = g.head;
            jg["values"] = g.values;
            jg["macs"] = g.macs;
            j["fusion_groups"].push_back(jg);
        }
        j["macs"] = macs;
        j["funcs"] = m.pipeline.functions().size();
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    std::printf("%s: opset %lld, %zu nodes (%lld removed by the graph passes), %zu constants, %zu Funcs, %lld MACs\n",
                o.model.c_str(), static_cast<long long>(m.opset), m.nodes.size(), static_cast<long long>(m.nodes_removed),
                m.constants.size(), m.pipeline.functions().size(), static_cast<long long>(macs));
    for (const auto &t : m.inputs)
        std::printf("  input  %-20s %-6s %s\n", t.name.c_str(), t.type.to_string().c_str(), shape_text(t.shape).c_str());
    for (const onnx::ModelNode &n : m.nodes) {
        std::string outs;
        for (const auto &t : n.outputs) outs += (outs.empty() ? "" : ", ") + t.name + " " + t.type.to_string() + " " + shape_text(t.shape);
        std::printf("  node   %-20s %-18s -> %s", (n.name.empty() ? "-" : n.name).c_str(), n.op_type.c_str(), outs.c_str());
        if (n.macs) std::printf("  (%lld MACs)", static_cast<long long>(n.macs));
        std::printf("\n");
    }
    for (const auto &t : m.outputs)
        std::printf("  output %-20s %-6s %s\n", t.name.c_str(), t.type.to_string().c_str(), shape_text(t.shape).c_str());
    std::printf("%zu fusion groups (each value joins the group of the producers only it reads; one matmul, conv or reduction per group):\n",
                groups.size());
    for (const GroupReport &g : groups) {
        std::string inside;
        for (const std::string &v : g.values) inside += (inside.empty() ? "" : " + ") + v;
        std::printf("  group  %s", inside.c_str());
        if (g.macs) std::printf("  (%lld MACs)", static_cast<long long>(g.macs));
        std::printf("\n");
    }
    return 0;
}

} // namespace

Command add_import_command(CLI::App &app) {
    auto o = std::make_shared<ImportOptions>();
    CLI::App *cmd = app.add_subcommand("import", "import an ONNX model and print its graph: nodes, shapes, MACs, fusion groups");
    cmd->footer("Runs ONNX's checker and shape inference, then turns every node into operator-library Funcs.\n"
                "Unsupported ops or attributes, unbound symbolic dimensions and malformed files are errors\n"
                "naming the node (name and op_type) and what is supported.");
    cmd->add_option("model", o->model, "the ONNX model file")->required();
    cmd->add_option("--dim", o->dims, "bind a symbolic dimension: NAME=VALUE (repeatable)");
    cmd->add_flag("--no-passes", o->no_passes, "import the graph as the file has it (no BatchNorm folding, no dead or common nodes removed)");
    cmd->add_flag("--json", o->json, "print the graph as JSON");
    return {cmd, [o] { return run(*o); }};
}

} // namespace tessera::cli
