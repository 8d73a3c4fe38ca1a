// einsum: one reduction Func over the letters the output does not keep.
#include <algorithm>
#include <map>
#include <set>

#include "op_util.h"
#include "tessera/ir_operator.h"
#include "tessera/ops/linear.h"

namespace tessera::ops {

using namespace tessera::internal::oputil;

Tensor einsum(const std::string &equation, const std::vector<Tensor> &operands, const std::string &name) {
    const std::string op = "einsum";
    std::string eq;
    for (char ch : equation)
        if (ch != ' ') eq += ch;
    // An ellipsis stands for the same leading dimensions in every term: spell them as
    // letters no term uses (as NumPy does), by each operand's rank.
    if (eq.find("...") != std::string::npos) {
        std::string unused;
        for (char l = 'A'; l <= 'Z'; ++l)
            if (eq.find(l) == std::string::npos) unused += l;
        const size_t arrow_at = eq.find("->");
        std::vector<std::string> terms_in;
        std::string lhs_text = eq.substr(0, arrow_at), term;
        for (char ch : lhs_text + ",") {
            if (ch != ',') {
                term += ch;
                continue;
            }
            terms_in.push_back(term);
            term.clear();
        }
        // Dimensions under each operand's ellipsis, aligned from the right as NumPy broadcasts.
        std::vector<size_t> under(terms_in.size(), 0);
        size_t widest = 0;
        for (size_t i = 0; i < terms_in.size() && i < operands.size(); ++i)
            if (terms_in[i].find("...") != std::string::npos) {
                under[i] = static_cast<size_t>(std::max(0, operands[i].dimensions() - static_cast<int>(terms_in[i].size() - 3)));
                widest = std::max(widest, under[i]);
            }
        if (widest > unused.size()) fail(op, name, "equation '" + equation + "' has too many dimensions under its ellipsis");
        auto spell = [&](const std::string &t, size_t n) {
            const size_t dots = t.find("...");
            return dots == std::string::npos ? t : t.substr(0, dots) + unused.substr(widest - n, n) + t.substr(dots + 3);
        };
        std::string spelled;
        for (size_t i = 0; i < terms_in.size(); ++i) spelled += (i ? "," : "") + spell(terms_in[i], under[i]);
        if (arrow_at != std::string::npos) spelled += "->" + spell(eq.substr(arrow_at + 2), widest);
        eq = spelled;
    }
    if (eq.find('.') != std::string::npos) fail(op, name, "equation '" + equation + "' has a '.' outside an ellipsis");
    const size_t arrow = eq.find("->");
    const std::string lhs = eq.substr(0, arrow);
    std::vector<std::string> terms{""};
    for (char ch : lhs) {
        if (ch == ',') terms.emplace_back();
        else if (std::islower(static_cast<unsigned char>(ch)) || std::isupper(static_cast<unsigned char>(ch))) terms.back() += ch;
        else fail(op, name, "equation '" + equation + "' has the character '" + std::string(1, ch) + "'; letters, ',' and '->' only");
    }
    if (terms.size() != operands.size())
        fail(op, name, "equation '" + equation + "' has " + std::to_string(terms.size()) + " operands but " +
                           std::to_string(operands.size()) + " are given");
    std::map<char, Expr> extent;
    std::map<char, int> count;
    for (size_t i = 0; i < terms.size(); ++i) {
        require_defined(operands[i], "operand " + std::to_string(i), op, name);
        if (static_cast<int>(terms[i].size()) != operands[i].dimensions())
            fail(op, name, "operand " + std::to_string(i) + " '" + operands[i].name() + "' " + shape_string(operands[i].shape()) +
                               " has rank " + std::to_string(operands[i].dimensions()) + " but '" + terms[i] + "' names " +
                               std::to_string(terms[i].size()) + " dimensions");
        if (operands[i].type() != operands[0].type())
            fail(op, name, "operand " + std::to_string(i) + " is " + operands[i].type().to_string() + " but operand 0 is " +
                               operands[0].type().to_string());
        for (size_t d = 0; d < terms[i].size(); ++d) {
            const char l = terms[i][d];
            ++count[l];
            const Expr e = operands[i].dim(static_cast<int>(d));
            const auto it = extent.find(l);
            if (it == extent.end()) extent[l] = e;
            else if (dims_differ(it->second, e))
                fail(op, name, "letter '" + std::string(1, l) + "' has the extents " + dim_string(it->second) + " and " + dim_string(e));
        }
    }
    std::string out;
    if (arrow != std::string::npos) {
        out = eq.substr(arrow + 2);
        for (char l : out)
            if (!extent.count(l) || std::count(out.begin(), out.end(), l) > 1)
                fail(op, name, "output letter '" + std::string(1, l) + "' is not an input letter or repeats");
    } else {
        for (const auto &[l, k] : count)
            if (k == 1) out += l;
    }
    std::map<char, Expr> coord;
    std::vector<Expr> pure, shape;
    for (char l : out) {
        const Var v(std::string(1, l));
        coord[l] = v;
        pure.push_back(v);
        shape.push_back(extent[l]);
    }
    std::vector<Range> ranges;
    std::vector<char> summed;
    for (const auto &[l, e] : extent)
        if (!coord.count(l)) {
            summed.push_back(l);
            ranges.push_back({int_const(0), e});
        }
    const Type acc = accumulator_type(operands[0].type());
    RDom r;
    if (!ranges.empty()) {
        r = RDom(ranges, "r");
        for (size_t k = 0; k < summed.size(); ++k) coord[summed[k]] = r[static_cast<int>(k)];
    }
    Expr product;
    for (size_t i = 0; i < operands.size(); ++i) {
        std::vector<Expr> args;
        for (char l : terms[i]) args.push_back(coord[l]);
        const Expr v = cast(acc, operands[i](args));
        product = product.defined() ? product * v : v;
    }
    Func f(name);
    if (pure.empty()) { // a full contraction: one element
        pure.push_back(Var("i"));
        shape.push_back(int_const(1));
    }
    if (ranges.empty()) {
        f(pure) = product;
    } else {
        f(pure) = make_zero(acc);
        f(pure) += product;
    }
    return Tensor(f, shape);
}

} // namespace tessera::ops
