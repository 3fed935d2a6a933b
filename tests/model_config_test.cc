// config.json values that C++ cannot hold are refused, not converted (found by
// tests/fuzz/model_config_fuzzer: "d_model": 5.5e27 converted to int was undefined behaviour).
#include "engine/model_config.h"

#include <gtest/gtest.h>

namespace xlate {
namespace {

std::string with(const std::string& key_value) {
  return "{\"vocab_size\": 1000, " + key_value + "}";
}

TEST(ModelConfigJson, RefusesValuesTheirTypesCannotHold) {
  for (const std::string& bad :
       {with("\"d_model\": 5555555555555555555555555564"), with("\"d_model\": 64.5"),
        with("\"d_model\": 2147483648"), with("\"d_model\": -2147483649"),
        with("\"d_model\": 18446744073709551615"), with("\"d_model\": \"64\""),
        with("\"dropout\": 1e300"), with("\"dropout\": \"0.1\""),
        with("\"source_lang\": 7")}) {
    auto config = ModelConfig::FromJson(bad, "c.json");
    ASSERT_FALSE(config.ok()) << bad;
    const std::string message(config.status().message());
    EXPECT_TRUE(message.find("has the wrong type") != std::string::npos ||
                message.find("is out of range") != std::string::npos)
        << config.status();
    EXPECT_EQ(message.rfind("c.json: key \"", 0), 0u) << message;
  }
}

// The QA round: a reload's error quoted a 50 MB config value in full. Values are quoted cut.
TEST(ModelConfigJson, ErrorsQuoteLongValuesCut) {
  const std::string huge(50 << 20, 'a');
  for (const std::string& key : {"d_model", "xlate_positional", "model_type"}) {
    auto config = ModelConfig::FromJson(with("\"" + key + "\": \"" + huge + "\""), "c.json");
    ASSERT_FALSE(config.ok()) << key;
    const std::string message(config.status().message());
    EXPECT_LT(message.size(), 400u) << key << ": " << message.substr(0, 400);
    EXPECT_NE(message.find("... (52428802 bytes)"), std::string::npos) << message;
  }
}

TEST(ModelConfigJson, ReadsValuesInRange) {
  auto config = ModelConfig::FromJson(
      with("\"d_model\": 64, \"dropout\": 0.25, \"source_lang\": \"en\""), "c.json");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->d_model, 64);
  EXPECT_FLOAT_EQ(config->dropout, 0.25f);
  EXPECT_EQ(config->source_lang, "en");
}

}  // namespace
}  // namespace xlate
