// The size of the problem a pipeline poses (problem_size.h).
#include "problem_size.h"

#include <map>

#include "loop_nest_ir.h"
#include "program_tensors.h"
#include "tessera/internal/function.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_visitor.h"
#include "tessera/lower.h"

namespace tessera::internal::chip {

namespace {

/// The elements of each Func's region in the loop nest of the unscheduled algorithm (where every
/// Func with updates is computed whole, at the root).
class Regions : public IRVisitor {
public:
    using IRVisitor::visit;
    void visit(const Realize *op) override {
        int64_t n = 1;
        for (const Range &r : op->bounds) n *= as_const_int(r.extent).value_or(0);
        elements[op->name] = n;
        IRVisitor::visit(op);
    }
    std::map<std::string, int64_t> elements;
};

int64_t product(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t v : shape) n *= v;
    return n;
}

chipsim::DType mac_dtype(Type t) {
    if (t.is_int() || t.is_uint()) return chipsim::DType::Int8;
    if (t == Float(16)) return chipsim::DType::FP16;
    return chipsim::DType::BF16; // the MXM multiplies fp32 in bf16
}

/// The factor of a product as read, before any widening cast.
Expr uncast(Expr e) {
    while (const Cast *c = e.as<Cast>()) e = c->value;
    return e;
}

} // namespace

chipsim::ProblemSize problem_size(const Pipeline &p, const std::vector<std::vector<int64_t>> &output_shapes) {
    chipsim::ProblemSize size;
    // A float Input the matrix unit multiplies crosses into the chip in the unit's dtype (the
    // host rounds fp32 to bf16), so its bytes count at that width: a kernel must not beat the
    // bound by reading fewer bytes than the bound says it must.
    std::map<std::string, int64_t> operand_bytes;
    bool any_product = false;
    for (const Func &f : p.functions())
        for (const Definition &u : f.contents()->updates) {
            if (!u.rdom) continue;
            for (const Mul *m : matmul_products(u.value, false)) {
                any_product = true;
                for (const Expr &factor : {uncast(m->a), uncast(m->b)})
                    if (const Call *c = factor.as<Call>(); c && c->call_type == CallType::Input && c->type.is_float())
                        operand_bytes[c->name] = chipsim::dtype_bytes(mac_dtype(c->type));
            }
        }
    for (const Input &in : p.inputs()) {
        auto narrow = operand_bytes.find(in.name());
        const int64_t element_bytes = narrow == operand_bytes.end() ? in.type().bytes() : std::min<int64_t>(in.type().bytes(), narrow->second);
        size.input_bytes += product(constant_shape(in)) * element_bytes;
    }
    std::map<std::string, int64_t> region;
    for (size_t o = 0; o < p.outputs().size() && o < output_shapes.size(); ++o) {
        region[p.outputs()[o].name()] = product(output_shapes[o]);
        size.output_bytes += product(output_shapes[o]) * p.outputs()[o].type().bytes();
    }
    if (!any_product) return size;
    {
        // Regions of the intermediate Funcs, from the algorithm without its schedule.
        const Schedule schedule = p.schedule();
        struct Restore {
            const Pipeline &p;
            const Schedule &s;
            ~Restore() { p.set_schedule(s); }
        } restore{p, schedule};
        p.set_schedule(Schedule{});
        Regions r;
        lower_unflattened(p, Target::interpreter(), output_shapes).body.accept(&r);
        for (auto &[name, n] : r.elements) region.emplace(name, n);
    }
    for (const Func &f : p.functions())
        for (const Definition &u : f.contents()->updates) {
            if (!u.rdom) continue;
            const std::vector<const Mul *> products = matmul_products(u.value, false);
            if (products.empty()) continue;
            int64_t domain = 1;
            for (const auto &v : u.rdom->vars) domain *= as_const_int(v.extent).value_or(0);
            size.macs += region[f.name()] * domain * int64_t(products.size());
            size.mac_dtype = mac_dtype(uncast(products[0]->a).type()); // its type before any widening cast
        }
    return size;
}

} // namespace tessera::internal::chip
