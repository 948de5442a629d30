// Status names, the thread-local last error, dcc_set_error and truncation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "dccrt.h"

namespace {

using ::testing::HasSubstr;
using ::testing::StrEq;

TEST(Errors, StatusNames) {
  EXPECT_STREQ(dcc_status_name(DCC_OK), "DCC_OK");
  EXPECT_STREQ(dcc_status_name(DCC_ERR_NULL_POINTER), "DCC_ERR_NULL_POINTER");
  EXPECT_STREQ(dcc_status_name(DCC_ERR_INVALID_ARGUMENT), "DCC_ERR_INVALID_ARGUMENT");
  EXPECT_STREQ(dcc_status_name(DCC_ERR_NEGATIVE_LENGTH), "DCC_ERR_NEGATIVE_LENGTH");
  EXPECT_STREQ(dcc_status_name(DCC_ERR_OVERFLOW), "DCC_ERR_OVERFLOW");
  EXPECT_STREQ(dcc_status_name(DCC_ERR_SIZE_MISMATCH), "DCC_ERR_SIZE_MISMATCH");
  EXPECT_STREQ(dcc_status_name(DCC_ERR_OUT_OF_MEMORY), "DCC_ERR_OUT_OF_MEMORY");
  EXPECT_STREQ(dcc_status_name(DCC_ERR_CUDA), "DCC_ERR_CUDA");
  EXPECT_STREQ(dcc_status_name(DCC_ERR_INTERNAL), "DCC_ERR_INTERNAL");
  // 15 is a valid value of the enum's C++ range, but no enumerator.
  EXPECT_STREQ(dcc_status_name(static_cast<dcc_status>(15)), "DCC_ERR_UNKNOWN");
}

TEST(Errors, AbiVersion) { EXPECT_EQ(dcc_abi_version(), uint32_t{DCCRT_ABI_VERSION}); }

TEST(Errors, FreshThreadHasNoError) {
  std::string message = "unset";
  dcc_status status = DCC_ERR_INTERNAL;
  std::thread([&] {
    message = dcc_last_error();
    status = dcc_last_status();
  }).join();
  EXPECT_EQ(message, "");
  EXPECT_EQ(status, DCC_OK);
}

TEST(Errors, LastErrorPersistsAcrossSuccessUntilCleared) {
  int64_t total = 0;
  const int32_t bad[] = {1, -7};
  ASSERT_EQ(dcc_total_length(bad, 2, &total), DCC_ERR_NEGATIVE_LENGTH);
  EXPECT_THAT(dcc_last_error(), StrEq("dcc_total_length: lengths[1] is -7; lengths must be >= 0"));
  EXPECT_EQ(dcc_last_status(), DCC_ERR_NEGATIVE_LENGTH);

  const int32_t good[] = {1, 7};
  ASSERT_EQ(dcc_total_length(good, 2, &total), DCC_OK);
  EXPECT_EQ(total, 8);
  EXPECT_THAT(dcc_last_error(), HasSubstr("lengths[1] is -7"));  // like errno

  dcc_clear_error();
  EXPECT_STREQ(dcc_last_error(), "");
  EXPECT_EQ(dcc_last_status(), DCC_OK);
}

TEST(Errors, ErrorsAreThreadLocal) {
  dcc_clear_error();
  std::thread([] {
    EXPECT_EQ(dcc_set_error(DCC_ERR_CUDA, "only on the other thread"), DCC_ERR_CUDA);
    EXPECT_STREQ(dcc_last_error(), "only on the other thread");
  }).join();
  EXPECT_STREQ(dcc_last_error(), "");
}

TEST(Errors, SetError) {
  EXPECT_EQ(dcc_set_error(DCC_ERR_SIZE_MISMATCH, "B of q is 3 but B of kv is 4"),
            DCC_ERR_SIZE_MISMATCH);
  EXPECT_STREQ(dcc_last_error(), "B of q is 3 but B of kv is 4");
  EXPECT_EQ(dcc_last_status(), DCC_ERR_SIZE_MISMATCH);

  EXPECT_EQ(dcc_set_error(DCC_ERR_INTERNAL, nullptr), DCC_ERR_INTERNAL);
  EXPECT_STREQ(dcc_last_error(), "");
  EXPECT_EQ(dcc_last_status(), DCC_ERR_INTERNAL);

  EXPECT_EQ(dcc_set_error(DCC_OK, "ignored"), DCC_OK);
  EXPECT_STREQ(dcc_last_error(), "");
  EXPECT_EQ(dcc_last_status(), DCC_OK);
}

TEST(Errors, LongMessagesAreTruncated) {
  const std::string exact(1023, 'x');
  dcc_set_error(DCC_ERR_INTERNAL, exact.c_str());
  EXPECT_EQ(std::string(dcc_last_error()), exact);

  const std::string longer = std::string(5000, 'y');
  dcc_set_error(DCC_ERR_INTERNAL, longer.c_str());
  const std::string got = dcc_last_error();
  EXPECT_EQ(got.size(), 1023u);
  EXPECT_EQ(got.substr(0, 1020), std::string(1020, 'y'));
  EXPECT_EQ(got.substr(1020), "...");
}

TEST(Errors, MessageMayQuoteThePreviousMessage) {
  dcc_set_error(DCC_ERR_CUDA, "first");
  const std::string wrapped = std::string("wrapped: ") + dcc_last_error();
  dcc_set_error(DCC_ERR_CUDA, dcc_last_error());  // aliasing the buffer itself
  EXPECT_STREQ(dcc_last_error(), "first");
  dcc_set_error(DCC_ERR_CUDA, wrapped.c_str());
  EXPECT_STREQ(dcc_last_error(), "wrapped: first");
}

}  // namespace
