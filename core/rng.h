/*
 * rng.h -- the one seeded PRNG of sim/ and replay/ (delay draws, cursor
 * ids): xoshiro256** seeded through splitmix64, both by Blackman and Vigna
 * (https://prng.di.unimi.it/, reference code xoshiro256starstar.c and
 * splitmix64.c, public domain). One 64-bit seed gives one stream; mt_rng_split
 * derives independent streams for sub-models so adding a draw in one model does
 * not shift another's.  Distributions are computed with IEEE double arithmetic
 * and libm log/sqrt/exp, so a given binary gives bit-identical output.
 */
#ifndef MT_RNG_H
#define MT_RNG_H

#include <stdint.h>

struct mt_rng {
    uint64_t s[4]; /* xoshiro256** state; never all zero */
};

/* Seeds r from seed via splitmix64 (any seed, including 0, is valid). */
void mt_rng_seed(struct mt_rng *r, uint64_t seed);

/* A new stream derived from seed and a stream number. */
void mt_rng_split(struct mt_rng *r, uint64_t seed, uint64_t stream);

/* Next 64 random bits. */
uint64_t mt_rng_next(struct mt_rng *r);

/* Uniform double in [0, 1) from the top 53 bits. */
double mt_rng_uniform(struct mt_rng *r);

/* Uniform integer in [0, n) (n > 0), Lemire's multiply-shift (slight bias
 * below 2^-32 for n < 2^32, irrelevant here). */
uint64_t mt_rng_below(struct mt_rng *r, uint64_t n);

/* Exponential with the given mean. */
double mt_rng_exp(struct mt_rng *r, double mean);

/* Standard normal (Marsaglia polar method; caches nothing). */
double mt_rng_normal(struct mt_rng *r);

/*
 * Lognormal with the given mean and coefficient of variation (stdev/mean).
 * cv <= 0 returns mean exactly.  sigma^2 = ln(1 + cv^2), mu = ln(mean) -
 * sigma^2 / 2.
 */
double mt_rng_lognormal(struct mt_rng *r, double mean, double cv);

#endif
