// `tessera plot`: a database of chip sweep points and a tuned host point becomes rooflines, a
// tuning curve and heat maps (PNG and SVG) and a self-contained report.html with names escaped,
// which headless Chromium renders to a screenshot that is not blank.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "tessera/ir_operator.h"
#include "tessera/tuning_db.h"
#include "test_support.h"

using namespace tessera;
using tessera_test::CommandResult;

namespace {

CommandResult tessera_cli(const std::string &args) {
    return tessera_test::run_command("'" + std::string(TESSERA_CLI) + "' " + args);
}

std::string read_file(const std::filesystem::path &p) {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

} // namespace

TEST(CliPlot, DrawsTheDatabaseAndTheReportRendersInChromium) {
    const auto dir = tessera_test::unique_temp_dir();
    const std::string db = (dir / "t.db").string();
    const nlohmann::json spec = {
        {"name", "plot"},
        {"ops", {{{"op", "matmul"}, {"grid", {{"M", {64, 256}}, {"N", {64, 256}}, {"K", {64}}}}, {"dtypes", {"int8"}}}}},
        {"targets", {"tsp-mini", "npu-edge"}}};
    std::ofstream(dir / "spec.json") << spec.dump();
    const nlohmann::json host = {{"ops", {{{"op", "matmul"}, {"grid", {{"M", {16}}, {"N", {16}}, {"K", {16}}}}}}},
                                 {"targets", {"host"}},
                                 {"tuner", {{"budget", 3}, {"repetitions", 1}}}};
    std::ofstream(dir / "host.json") << host.dump();
    ASSERT_EQ(tessera_cli("sweep '" + (dir / "spec.json").string() + "' --db '" + db + "' --quiet").status, 0);
    ASSERT_EQ(tessera_cli("sweep '" + (dir / "host.json").string() + "' --db '" + db + "' --quiet").status, 0);
    {
        // A record whose description would be markup if the report did not escape it.
        Input A(Float(32), {8, 8}, "A");
        Var i("i"), j("j");
        Func F("F");
        F(i, j) = A(i, j) * 2.0f;
        TuningDatabase d(db);
        MeasuredSchedule m;
        m.measurement = Measurement::chip_cycles(10);
        d.add(Workload::of(Pipeline(F), {{8, 8}}, "<script>alert('x')</script> & co"),
              TargetIdentity::of(Target::named("tsp-mini")), m);
    }

    // The host point's record keeps its tuning curve, with the cost models' predictions for each
    // candidate beside its measured time (what tuning_curves draws).
    for (const TuningRecord &r : TuningDatabase(db).list()) {
        // A chip point's record keeps its problem bound (the plots' bound), below its cycles.
        if (r.target_name != "host" && r.measurement.kind == Measurement::Kind::Cycles && r.details != "{}") {
            const auto d = nlohmann::json::parse(r.details);
            EXPECT_GT(d["problem_bound_cycles"].get<double>(), 0.0) << r.details;
            EXPECT_LE(d["problem_bound_cycles"].get<double>(), double(r.measurement.cycles)) << r.details;
        }
        if (r.target_name == "host") {
            const auto d = nlohmann::json::parse(r.details);
            ASSERT_TRUE(d.contains("history")) << r.details;
            EXPECT_EQ(d["predicted_analytic"].size(), d["history"].size()) << r.details;
            EXPECT_EQ(d["predicted_learned"].size(), d["history"].size()) << r.details;
        }
    }

    const std::string out = (dir / "plots").string();
    const CommandResult plot = tessera_cli("plot '" + db + "' -o '" + out + "' --json");
    ASSERT_EQ(plot.status, 0) << plot.out << plot.err;
    const auto j = nlohmann::json::parse(plot.out);
    EXPECT_EQ(j["records"], 2 * 2 * 2 + 1 + 1); // M x N x chips, the host point, the escaped one
    for (const char *name : {"roofline_tsp-mini", "roofline_npu-edge", "tuning_curves", "heatmap_tsp-mini_matmul",
                             "heatmap_npu-edge_matmul"}) {
        const std::string png = read_file(std::filesystem::path(out) / (std::string(name) + ".png"));
        EXPECT_EQ(png.substr(0, 8), "\x89PNG\r\n\x1a\n") << name;
        EXPECT_NE(read_file(std::filesystem::path(out) / (std::string(name) + ".svg")).find("<svg"), std::string::npos) << name;
    }
    const std::string html = read_file(std::filesystem::path(out) / "report.html");
    EXPECT_NE(html.find("&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; co"), std::string::npos);
    EXPECT_EQ(html.find("<script>"), std::string::npos);
    EXPECT_NE(html.find("data:image/png;base64,"), std::string::npos); // self-contained
    EXPECT_EQ(html.find("src='plots"), std::string::npos);

    // Rendered by a browser, the page shows plots: many colours, much of it not white.
    const std::string shot = (dir / "shot.png").string();
    const CommandResult chromium = tessera_test::run_command(
        "chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,1400 --screenshot='" + shot +
        "' 'file://" + out + "/report.html'");
    ASSERT_EQ(chromium.status, 0) << chromium.err;
    const CommandResult pixels = tessera_test::run_command(
        "/usr/bin/python3 -c \"import matplotlib.image as m, numpy as n; a = m.imread('" + shot +
        "')[:, :, :3]; print(len(n.unique((a * 255).astype(int).reshape(-1, 3), axis=0)), (a.sum(axis=2) < 2.9).mean())\"");
    ASSERT_EQ(pixels.status, 0) << pixels.err;
    std::istringstream in(pixels.out);
    int colours = 0;
    double not_white = 0;
    in >> colours >> not_white;
    EXPECT_GT(colours, 100) << pixels.out;
    EXPECT_GT(not_white, 0.05) << pixels.out;
}

TEST(CliPlot, MistakesAreClearErrorsAndWriteNothing) {
    const auto dir = tessera_test::unique_temp_dir();
    const std::string text = (dir / "notes.txt").string();
    std::ofstream(text) << "these are notes, long enough to fill the hundred bytes SQLite reads as the header of a file....";
    const CommandResult not_sqlite = tessera_cli("plot '" + text + "' -o '" + (dir / "out").string() + "'");
    EXPECT_EQ(not_sqlite.status, 1);
    EXPECT_EQ(not_sqlite.err.rfind("tessera: error: ", 0), 0u) << not_sqlite.err;
    EXPECT_NE(not_sqlite.err.find("not an SQLite file"), std::string::npos) << not_sqlite.err;
    EXPECT_FALSE(std::filesystem::exists(dir / "out"));
    const CommandResult missing = tessera_cli("plot '" + (dir / "none.db").string() + "' -o '" + (dir / "out").string() + "'");
    EXPECT_EQ(missing.status, 1);
    EXPECT_NE(missing.err.find("does not exist"), std::string::npos) << missing.err;
}
