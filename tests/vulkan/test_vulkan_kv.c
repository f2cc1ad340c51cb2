/* test_vulkan_kv: the Vulkan backend's Q4_0 KV cache (store_q4_0, flash_attn_q4_0) against
 * ref_ops on lavapipe under the Khronos validation layer (tests/vulkan/vulkan.cmake sets the
 * environment; zero validation messages is part of passing): the cases of
 * tests/cpu/kv_q4_0_cases.h (the refusal of head_dim 80 last: it leaves a sticky error). */
#include "cpu/kv_q4_0_cases.h"
#include "vk_testlib.h"

#include <stdio.h>

int main(void) {
    anv_log_enabled = 0;
#ifdef ANVIL_HAVE_VULKAN
    backend *be = vkt_open_lavapipe();
    if (!be) return tu_finish();
    const char *val = getenv("ANVIL_VK_VALIDATE");
    const bool validate = val && strcmp(val, "1") == 0;
    if (validate) CHECKF(vk_validation_active(), "ANVIL_VK_VALIDATE=1 but no validation messenger");
    printf("device: %s\n", be->device_desc);
    kvq_test_store(be, false);
    kvq_test_attention(be, 256); /* ends with a refusal: the backend keeps that sticky error */
    be->ops->destroy(be);
    if (validate) CHECKF(vk_validation_messages() == 0, "%d validation messages", vk_validation_messages());
#else
    printf("built without Vulkan\n");
#endif
    return tu_finish();
}
