// write_dispatch_library's refusals of tables the dispatch runtime could not serve: each is a
// tessera::Error naming what is wrong, and nothing is written.
#include <gtest/gtest.h>

#include <filesystem>

#include "test_support.h"
#include "tessera/codegen/shape_dispatch.h"
#include "tessera/error.h"

namespace {

using namespace tessera;

/// C(M, 8) = f(A(M, 4)) dispatched on M = 1..16 by kernels for M = 8 and 16 (never compiled:
/// every table here is refused before a library is read).
DispatchTable table_of_two_buckets() {
    DispatchTable t;
    t.name = "f";
    t.params = {{"M", 1, 16}};
    t.arguments = {{"A", false, Int(8), {0, -1}, {0, 4}}, {"C", true, Int(32), {0, -1}, {0, 8}}};
    t.buckets = {{"f_M8", "libf_M8.a", {8}, ""}, {"f_M16", "libf_M16.a", {16}, ""}};
    return t;
}

void expect_refused(const DispatchTable &t, const std::string &words) {
    const std::filesystem::path dir = tessera_test::unique_temp_dir();
    try {
        write_dispatch_library(t, dir.string());
        FAIL() << "the table was accepted; expected an error with '" << words << "'";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "libf.a"));
}

TEST(DispatchTable, AParameterNoArgumentCarriesIsRefused) {
    DispatchTable t = table_of_two_buckets();
    t.params.push_back({"N", 1, 4});
    for (DispatchBucket &b : t.buckets) b.values.push_back(4);
    expect_refused(t, "parameter N is no argument's extent");
}

TEST(DispatchTable, ARangeNoKernelCoversIsRefused) {
    DispatchTable t = table_of_two_buckets();
    t.buckets.pop_back();
    expect_refused(t, "no kernel covers the largest shape of the range (M = 16)");
}

TEST(DispatchTable, ATableWithoutKernelsIsRefused) {
    DispatchTable t = table_of_two_buckets();
    t.buckets.clear();
    expect_refused(t, "no kernels");
}

TEST(DispatchTable, AnArgumentNamingAMissingParameterIsRefused) {
    DispatchTable t = table_of_two_buckets();
    t.arguments[1].param[0] = 3;
    expect_refused(t, "argument C names a parameter the table lacks");
}

} // namespace
