// A model on the host group by group (chip_model.h: profile_model_on_host): the graph values
// grouped as the fusion schedule fuses them, each group JIT-compiled on its own and timed, so a
// trace can show where a model's time goes. The whole-model JIT (one pipeline) stays the fast
// path; this is its profile.
#include <chrono>
#include <set>

#include "tessera/codegen/chip_model.h"
#include "tessera/codegen/host_schedules.h"
#include "tessera/codegen/jit.h"
#include "tessera/codegen/runtime.h"
#include "tessera/internal/cut_subgraph.h"
#include "tessera/internal/function.h"

namespace tessera {

namespace {

/// A graph value's place in the graph: the values it reads directly, and whether one of its own
/// Funcs has updates (a matmul, a conv, a reduction: what a fusion group is built around).
struct ValueNode {
    std::vector<std::string> producers;
    bool reduces = false;
};

ValueNode value_node(const std::map<std::string, GraphValue> &values, const std::string &v) {
    std::map<std::string, std::vector<int64_t>> cuts;
    for (const auto &[name, gv] : values)
        if (name != v) cuts[name] = gv.shape;
    const internal::CutSubgraph cut = internal::cut_subgraph(values.at(v).func, cuts);
    ValueNode node;
    for (const auto &[name, input] : cut.cut_inputs) node.producers.push_back(name);
    for (const Func &f : internal::topological_order({cut.head})) node.reduces = node.reduces || f.num_updates() > 0;
    return node;
}

} // namespace

std::vector<ModelFusionGroup> model_fusion_groups(const Pipeline &model, const std::vector<GraphValue> &value_list) {
    std::map<std::string, GraphValue> values;
    for (const GraphValue &v : value_list) values[v.func.name()] = v;
    std::set<std::string> outputs;
    for (const Func &o : model.outputs()) outputs.insert(o.name());
    std::vector<std::string> order;
    for (const Func &f : internal::topological_order(model.outputs()))
        if (values.count(f.name())) order.push_back(f.name());
    std::map<std::string, ValueNode> nodes;
    std::map<std::string, int> consumers;
    for (const std::string &v : order)
        for (const std::string &p : (nodes[v] = value_node(values, v)).producers) ++consumers[p];

    // A value joins the groups of the producers only it reads, as long as the merged group holds
    // at most one value that reduces (one matmul or conv with its epilogue, not two matmuls).
    std::map<std::string, std::vector<std::string>> members; // group head -> values inside, producers first
    std::map<std::string, bool> reduces;                      // group head -> a value inside reduces
    for (const std::string &v : order) {
        std::vector<std::string> m;
        bool r = nodes[v].reduces;
        for (const std::string &p : nodes[v].producers)
            if (consumers[p] == 1 && !outputs.count(p) && members.count(p) && !(r && reduces[p])) {
                m.insert(m.end(), members[p].begin(), members[p].end());
                r = r || reduces[p];
                members.erase(p);
            }
        m.push_back(v);
        members[v] = m;
        reduces[v] = r;
    }
    std::vector<ModelFusionGroup> groups;
    for (const std::string &head : order)
        if (members.count(head)) groups.push_back({head, members[head]});
    return groups;
}

HostModelProfile profile_model_on_host(const Pipeline &model, const std::vector<GraphValue> &value_list, const Bindings &bindings) {
    std::map<std::string, GraphValue> values;
    for (const GraphValue &v : value_list) values[v.func.name()] = v;
    HostModelProfile profile;
    std::map<std::string, Buffer<>> computed; // group head -> its result
    for (const ModelFusionGroup &group : model_fusion_groups(model, value_list)) {
        const std::string &head = group.head;
        const std::set<std::string> inside(group.members.begin(), group.members.end());
        std::map<std::string, std::vector<int64_t>> cuts;
        for (const auto &[name, gv] : values)
            if (!inside.count(name)) cuts[name] = gv.shape;
        const GraphValue &hv = values.at(head);
        const internal::CutSubgraph cut = internal::cut_subgraph(hv.func, cuts);
        Bindings b = bindings;
        for (const auto &[name, input] : cut.cut_inputs) b.emplace_back(input, computed.at(name));
        const std::vector<std::vector<int64_t>> shapes{hv.shape};
        const Pipeline group_pipeline(cut.head);
        host_schedules::model(group_pipeline); // as the whole model compiles
        const CompiledKernel kernel = compile_jit(group_pipeline, shapes, Target::host());
        const auto start = std::chrono::steady_clock::now();
        computed[head] = run_pipeline_kernel(kernel, shapes, b).at(0);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        HostGroupRun run{head, hv.label, {}, ms};
        for (const std::string &m : group.members) run.fused.push_back(values.at(m).label);
        profile.groups.push_back(std::move(run));
    }
    for (const Func &o : model.outputs()) profile.outputs.push_back(computed.at(o.name()));
    return profile;
}

} // namespace tessera
