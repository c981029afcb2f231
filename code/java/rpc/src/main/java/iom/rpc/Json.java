package iom.rpc;

import tools.jackson.databind.json.JsonMapper;

/**
 * The one JSON mapper of every provider and the consumer (Jackson 3, the version Spring Boot
 * brings): the Spring providers are given this very instance as their message converters'
 * mapper, so every provider writes the same bytes for the same answer.
 */
public final class Json {
    private Json() {}

    public static final JsonMapper MAPPER = JsonMapper.builder().build();

    static Object convert(Object value, Class<?> type) {
        if (value == null || type.isInstance(value) || (type.isPrimitive() && boxed(type).isInstance(value))) {
            return value;
        }
        return MAPPER.convertValue(value, type);
    }

    private static Class<?> boxed(Class<?> primitive) {
        return primitive == int.class ? Integer.class : primitive == long.class ? Long.class
                : primitive == boolean.class ? Boolean.class : primitive == double.class ? Double.class : Void.class;
    }
}
