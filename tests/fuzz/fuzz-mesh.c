/* fuzz-mesh — mesh strings (core/mesh.c).
 *
 * Input: a mesh as --mesh and 'set mesh' take it ("batch=2,model=4").
 * One that is refused must say why; one that parses must print
 * (mesh_to_string) to a string that parses to the same mesh.
 */
#include "fuzz.h"

static void fuzz_mesh(const uint8_t *data, size_t size) {
  g_autofree char *spec = fuzz_text(data, size);
  Mesh mesh;
  g_autoptr(Diag) why = diag_new(NULL);
  if (!mesh_parse(spec, &mesh, why)) {
    if (!diag_any(why))
      fuzz_fail("'%s' is refused without a reason", spec);
    return;
  }
  g_autofree char *printed = mesh_to_string(&mesh);
  Mesh again;
  g_autoptr(Diag) again_why = diag_new(NULL);
  if (!mesh_parse(printed, &again, again_why))
    fuzz_fail("'%s' prints as '%s', which does not parse: %s", spec, printed,
              diag_text(again_why));
  if (!mesh_equal(&mesh, &again))
    fuzz_fail("'%s' prints as '%s', another mesh", spec, printed);
  if (mesh_devices(&mesh) < 1)
    fuzz_fail("'%s' has %" G_GINT64_FORMAT " devices", spec,
              mesh_devices(&mesh));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fuzz_run(fuzz_mesh, data, size);
}
