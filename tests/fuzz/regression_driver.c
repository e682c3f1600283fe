/*
 * regression_driver.c -- a plain main() that feeds files to a libFuzzer
 * entry point, so `make test` replays every corpus input and every crash
 * ever found without libFuzzer (zstd tests/fuzz/regression_driver.c).
 *
 * Usage: fuzz_X_regress FILE|DIR...
 *
 * Exit status: 0 when every input was replayed; 1 when one could not be
 * read, or when there was no input at all (an empty or missing corpus
 * would otherwise pass while testing nothing).  A target that finds a
 * property broken aborts, and so fails the run.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    long n;

    if (f == NULL) {
        perror(path);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (n < 0) {
        fclose(f);
        return 1;
    }
    /* Exactly n bytes, so ASan sees any overread. */
    buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "%s: read failed\n", path);
        free(buf);
        fclose(f);
        return 1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    return 0;
}

int
main(int argc, char **argv)
{
    int files = 0, errors = 0;

    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 1;
        }
        if (S_ISDIR(st.st_mode)) {
            DIR *d = opendir(argv[i]);
            struct dirent *e;
            if (d == NULL) {
                perror(argv[i]);
                return 1;
            }
            while ((e = readdir(d)) != NULL) {
                char path[4096];
                if (e->d_name[0] == '.')
                    continue;
                snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
                errors += run_file(path);
                files++;
            }
            closedir(d);
        } else {
            errors += run_file(argv[i]);
            files++;
        }
    }
    if (files == 0) {
        fprintf(stderr, "%s: no input to replay (empty corpus?)\n", argv[0]);
        return 1;
    }
    printf("%s: %d inputs replayed\n", argv[0], files);
    return errors ? 1 : 0;
}
